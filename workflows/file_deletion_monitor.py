"""`file-deletion-monitor`: what was deleted, and which notes it left holding broken links.

For each deleted note it records (kind `deletion`, keyed by the deleted path) what was last
known of it (its title and word count from the markdown analyzer, its size and hash from the
change log, when those workflows saw it) and every link that pointed to it and now resolves to
nothing: the source note, the link target as written, and its line. A link that found another
note of the same name after the deletion is not broken, and is not listed.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from weaver.engine import (
    BrokenLink,
    FileTrigger,
    NewRecord,
    NoInput,
    OnFile,
    WorkflowContext,
    workflow,
)

KIND = "deletion"
CHANGE_LOG = "file-change-logger"
ANALYZER = "markdown-analyzer"


@workflow(
    id="file-deletion-monitor",
    name="File deletion monitor",
    triggers=[OnFile("**", kinds=["delete"])],
    timeout=120,
)
def monitor_deletions(ctx: WorkflowContext[NoInput]) -> dict[str, Any]:
    """Record what was deleted and which notes now hold broken links because of it."""
    if not isinstance(ctx.trigger, FileTrigger):
        return {"deleted": []}
    deleted = list(dict.fromkeys(ctx.trigger.paths))
    broken = ctx.broken_links_to(deleted)
    known = last_known(ctx, deleted)
    entries = [describe(path, known.get(path, {}), broken.get(path, [])) for path in deleted]
    ctx.records.extend(NewRecord(entry["path"], entry, KIND) for entry in entries)
    return {"deleted": entries}


def last_known(ctx: WorkflowContext[NoInput], paths: Collection[str]) -> dict[str, dict[str, Any]]:
    """What the change log and the analyzer last recorded of each path."""
    changes = ctx.records.of(CHANGE_LOG).latest_many(paths, kind="change")
    analyses = ctx.records.of(ANALYZER).latest_many(paths, kind="analysis")
    known: dict[str, dict[str, Any]] = {}
    for path in paths:
        change = changes[path].data if path in changes else {}
        analysis = analyses[path].data if path in analyses else {}
        known[path] = {
            "title": analysis.get("title"),
            "words": analysis.get("words"),
            "tags": analysis.get("tags", []),
            "size": change.get("size"),
            "hash": change.get("hash"),
        }
    return known


def describe(path: str, known: dict[str, Any], broken: list[BrokenLink]) -> dict[str, Any]:
    return {
        "path": path,
        **known,
        "brokenLinks": [
            {"source": link.source, "target": link.target, "line": link.line + 1} for link in broken
        ],
        "notesWithBrokenLinks": sorted({link.source for link in broken}),
    }
