"""The ```tasks code blocks of a note: where each starts and the query it holds."""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["TasksBlock", "find_tasks_blocks"]

_OPENING = re.compile(r"^\s*(`{3,}|~{3,})\s*tasks\s*$", re.IGNORECASE)


class TasksBlock(NamedTuple):
    line: int  # 1-based line of the opening fence
    query: str


def find_tasks_blocks(text: str) -> list[TasksBlock]:
    """Every tasks block in `text`, in order; an unclosed one runs to the end, as Obsidian
    renders it."""
    blocks: list[TasksBlock] = []
    fence: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if fence is None:
            opening = _OPENING.match(line)
            if opening:
                fence, start, body = opening[1], number, []
            elif re.match(r"^\s*(`{3,}|~{3,})", line):
                fence, start, body = "skip:" + line.strip()[:3], number, []
            continue
        closing = re.match(r"^\s*(`{3,}|~{3,})\s*$", line)
        if closing and closing[1][0] == fence.removeprefix("skip:")[0]:
            if not fence.startswith("skip:"):
                blocks.append(TasksBlock(start, "\n".join(body)))
            fence = None
            continue
        body.append(line)
    if fence is not None and not fence.startswith("skip:"):
        blocks.append(TasksBlock(start, "\n".join(body)))
    return blocks
