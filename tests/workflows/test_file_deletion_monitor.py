"""file-deletion-monitor: runs on deletions only, and names the notes a deletion left holding
broken links, with what was last known of the deleted note."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.workflow_vault import WorkflowVault, workflow_vault
from weaver.runtime.app import App

ID = "file-deletion-monitor"


@pytest.fixture
def vault(app: App) -> Iterator[WorkflowVault]:
    with workflow_vault(app, ID, "file-change-logger", "markdown-analyzer") as opened:
        yield opened


def test_a_deletion_records_the_notes_left_with_broken_links(vault: WorkflowVault) -> None:
    ada = "# Ada Lovelace\n\nWrote the first program.\n"
    vault.write(
        {
            "people/Ada.md": ada,
            "notes/history.md": "Intro\n\nSee [[Ada]] and [[people/Ada|her]].\n",
            "notes/engine.md": "Built for ![[Ada]]\n",
            "notes/other.md": "[[Babbage]] was broken before.\n",
        }
    )
    assert vault.runs(ID) == []  # adds are not deletions
    vault.delete("people/Ada.md")

    [record] = vault.records(ID)
    assert record.key == "people/Ada.md" and record.kind == "deletion"
    deleted = record.data
    assert deleted["notesWithBrokenLinks"] == ["notes/engine.md", "notes/history.md"]
    assert deleted["brokenLinks"] == [
        {"source": "notes/engine.md", "target": "Ada", "line": 1},
        {"source": "notes/history.md", "target": "Ada", "line": 3},
        {"source": "notes/history.md", "target": "people/Ada", "line": 3},
    ]
    # What it was, from the analyzer and the change log that saw it earlier.
    assert (deleted["title"], deleted["words"], deleted["size"]) == ("Ada", 6, len(ada))
    assert vault.last_result(ID) == {"deleted": [deleted]}


def test_a_link_that_finds_another_note_is_not_broken(vault: WorkflowVault) -> None:
    vault.write(
        {
            "a/Topic.md": "first",
            "bb/Topic.md": "second",
            "c/index.md": "[[Topic]]",  # the shortest path wins: a/Topic.md
            "c/exact.md": "[[a/Topic]]",
        }
    )
    vault.delete("a/Topic.md")  # [[Topic]] now finds bb/Topic.md; [[a/Topic]] finds nothing
    [record] = vault.records(ID)
    assert record.data["notesWithBrokenLinks"] == ["c/exact.md"]


def test_moves_and_edits_are_not_deletions(vault: WorkflowVault) -> None:
    vault.write({"a.md": "x"})
    vault.write({"a.md": "y"})
    vault.move("a.md", "b.md")
    assert vault.runs(ID) == []
    assert vault.trigger(ID).result == {"deleted": []}
