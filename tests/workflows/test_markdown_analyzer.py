"""markdown-analyzer: what it measures in a note, what it counts as new, when it runs, and the
whole tasks-demo vault analysed against what Obsidian itself computed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from tests.corpora import require_corpora
from tests.workflow_vault import WorkflowVault, workflow_vault
from weaver.config import Settings
from weaver.runtime.app import App, open_app
from weaver.vault.fs import MAX_NOTE_BYTES

ID = "markdown-analyzer"

NOTE = """---
tags: [project]
---
# Plan

Intro with a [[Known]] link, a [[Missing]] one and ![[diagram.png]] #draft

## Tasks
- [ ] write it
- [x] outline it
- [X] name it

```
[[not a link]] #not-a-tag
```
"""


@pytest.fixture
def vault(app: App) -> Iterator[WorkflowVault]:
    with workflow_vault(app, ID) as opened:
        yield opened


def analysis_of(vault: WorkflowVault, path: str) -> dict[str, object]:
    return vault.records(ID, key=path, kind="analysis")[0].data


def test_a_note_is_measured_and_stored(vault: WorkflowVault) -> None:
    vault.write({"Known.md": "here", "Plan.md": NOTE})
    plan = analysis_of(vault, "Plan.md")
    assert plan["title"] == "Plan"
    assert plan["headings"] == [
        {"level": 1, "text": "Plan", "line": 4},
        {"level": 2, "text": "Tasks", "line": 8},
    ]
    assert (plan["links"], plan["embeds"]) == (2, 1)
    assert (plan["tagCount"], plan["tags"]) == (2, ["project", "draft"])
    assert plan["brokenLinks"] == [
        {"target": "Missing", "line": 6},
        {"target": "diagram.png", "line": 6},
    ]
    assert plan["tasks"] == {"open": 1, "done": 2, "total": 3}
    assert plan["readingMinutes"] == 1
    # The run's result holds the same analysis.
    notes = vault.last_result(ID)["notes"]
    assert [n["path"] for n in notes] == ["Known.md", "Plan.md"]


def test_reading_time_follows_the_words_per_minute_setting(app: App) -> None:
    with workflow_vault(app, ID, settings={ID: {"words_per_minute": 100}}) as vault:
        vault.write({"long.md": "word " * 250})
        long = analysis_of(vault, "long.md")
    assert (long["words"], long["readingMinutes"]) == (250, 3)


def test_new_tags_and_new_broken_links_are_told_apart(vault: WorkflowVault) -> None:
    vault.write({"old.md": "#shared", "other.md": "#pair"})
    vault.write({"a.md": "#shared #fresh [[Nowhere]]", "b.md": "#pair #twin", "c.md": "#twin"})
    assert analysis_of(vault, "b.md")["newTags"] == ["twin"]  # new with c.md, in one batch
    first = analysis_of(vault, "a.md")
    assert first["newTags"] == ["fresh"]  # `shared` was carried by old.md already
    assert first["newBrokenLinks"] == ["Nowhere"]

    vault.write({"a.md": "#shared #fresh #later [[Nowhere]] [[Elsewhere]]"})
    second = analysis_of(vault, "a.md")
    assert second["newTags"] == ["later"]
    assert second["newBrokenLinks"] == ["Elsewhere"]


def test_runs_on_adds_edits_and_moves_but_not_deletions(vault: WorkflowVault) -> None:
    vault.write({"a.md": "one"})
    vault.write({"a.md": "one two"})
    vault.move("a.md", "b/a.md")
    assert len(vault.runs(ID)) == 3
    # The analyses followed the note to its new path.
    assert [r.data["words"] for r in vault.records(ID, key="b/a.md")] == [2, 2, 1]
    vault.delete("b/a.md")
    assert len(vault.runs(ID)) == 3


def test_by_hand_one_note_or_every_note(vault: WorkflowVault) -> None:
    vault.write({"a.md": "one", "b.md": "two words"})
    one = vault.trigger(ID, {"path": "b.md"})
    assert (one.status, one.result["path"], one.result["words"]) == ("completed", "b.md", 2)
    every = vault.trigger(ID, {})
    assert every.result["analyzed"] == 2
    assert [n["path"] for n in every.result["notes"]] == ["a.md", "b.md"]
    gone = vault.trigger(ID, {"path": "none.md"})
    assert (gone.status, gone.error) == ("failed", "NoteNotFoundError: File not found: 'none.md'")
    outside = vault.trigger(ID, {"path": "../secret.md"})
    assert outside.status == "failed" and "Invalid path" in (outside.error or "")


def test_a_note_too_large_to_read_is_analysed_as_empty_with_the_reason(
    vault: WorkflowVault,
) -> None:
    vault.write({"dump.md": "#tag [[link]] " + "x" * MAX_NOTE_BYTES})
    dump = vault.trigger(ID, {"path": "dump.md"})
    assert dump.status == "completed"
    assert (dump.result["words"], dump.result["tags"]) == (0, [])
    assert dump.result["error"].startswith("File too large: 'dump.md' (67,108,8")


@pytest.mark.corpus
def test_tasks_demo_analysed_as_obsidian_sees_it(tmp_path: Path) -> None:
    corpora = require_corpora()
    root = corpora / "tasks-demo"
    # The corpus is read in place: the cache lives in tmp_path, nothing is written to it.
    app = open_app(Settings(vault=root, database_url=f"sqlite:///{tmp_path / 'cache.db'}"))
    try:
        app.indexer.reconcile()
        with workflow_vault(app, ID) as vault:
            run = vault.trigger(ID, {})
            analyses = {r.key: r.data for r in vault.records(ID)}
    finally:
        app.close()
    notes = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
    assert run.status == "completed" and run.result["analyzed"] == len(notes) == len(analyses)

    dumps = sorted((corpora / "tasks-demo-obsidian-cache").glob("*.json"))
    assert len(dumps) > 50
    for dump in dumps:
        data = json.loads(dump.read_text(encoding="utf-8"))
        cached, mine = data["cachedMetadata"], analyses[data["filePath"]]
        headings = [(h["level"], h["heading"]) for h in cached.get("headings", [])]
        assert [(h["level"], h["text"]) for h in mine["headings"]] == headings, dump.name
        tasks = [i["task"] for i in cached.get("listItems", []) if "task" in i]
        assert (mine["tasks"]["open"], mine["tasks"]["done"]) == (
            tasks.count(" "),
            len(tasks) - tasks.count(" "),
        ), dump.name

    # Broken links: exactly what Obsidian left unresolved, plus the attachments (images, PDFs)
    # the corpus does not ship, which Obsidian resolved.
    unresolved = json.loads(
        (
            corpora / "tasks-demo-obsidian-cache" / "metadataCache" / "unresolvedLinks.json"
        ).read_text()
    )
    expected = {(path, target) for path, targets in unresolved.items() for target in targets}
    found = {
        (path, broken["target"])
        for path, analysis in analyses.items()
        for broken in analysis["brokenLinks"]
        if PurePosixPath(broken["target"]).suffix.lower() in ("", ".md")
    }
    assert found == expected and len(expected) == 5
