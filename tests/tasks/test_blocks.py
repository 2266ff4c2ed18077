"""Finding a note's ```tasks blocks: only those, in order, with the line they open on."""

from __future__ import annotations

from weaver.tasks.blocks import TasksBlock, find_tasks_blocks


def test_tasks_blocks_are_found_and_other_fences_skipped() -> None:
    text = (
        "# Note\n```python\n```tasks inside code\n```\n"  # not a block: inside another fence
        "```tasks\nnot done\nsort by due\n```\n"
        "~~~ Tasks\n~~~\n"
        "````tasks\nlimit 3\n"  # never closed: runs to the end
    )
    assert find_tasks_blocks(text) == [
        TasksBlock(5, "not done\nsort by due"),
        TasksBlock(9, ""),
        TasksBlock(11, "limit 3"),
    ]
