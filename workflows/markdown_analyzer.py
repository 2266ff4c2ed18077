"""`markdown-analyzer`: what each note contains, stored per note for later queries.

For every note added, modified or moved (or by hand: `{"path": "x.md"}` for one note, whose
analysis is then the result, `{}` for every note of the vault) it records, as kind `analysis`
keyed by the note's path: the word count and reading time, the heading outline, how many links,
embeds and tags the note has and which tags, its broken links, and its task checkboxes open and
done. The latest analysis of a note is
`get_workflow_records {"workflowId": "markdown-analyzer", "key": "x.md", "limit": 1}`.

Each analysis also says what is new since the note's previous one: `newBrokenLinks`, and
`newTags`, the tags it gained that no other note in the vault carries. A note added to the vault
is new in full; a note analysed for the first time otherwise (found by a first index, or by
hand) has nothing to compare with, so nothing of it counts as new. The daily digest lists these.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from weaver.engine import (
    DEFAULT_WORDS_PER_MINUTE,
    BrokenLink,
    FileTrigger,
    LoadedNote,
    NewRecord,
    NoteAdded,
    NoteMoved,
    NoteNotFoundError,
    OnFile,
    StoredRecord,
    WorkflowContext,
    count_links,
    normalize_tag,
    outline,
    reading_minutes,
    tag_changes,
    tag_spellings,
    workflow,
)

KIND = "analysis"
# Every save of a note is analysed anew: an analysis superseded by a newer one goes after this
# many days (a note's newest analysis stays).
RETENTION_DAYS = 90
# A run over the whole vault returns this many analyses at most (all are stored).
RESULT_NOTES_LIMIT = 100
# Notes read and analysed between two looks at `ctx.cancelled` and two progress reports.
BATCH = 200


class AnalyzeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(
        default=None, description="The note to analyse; leave it out to analyse every note"
    )


class AnalyzerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    words_per_minute: int = Field(default=DEFAULT_WORDS_PER_MINUTE, ge=1, le=2000)


@workflow(
    id="markdown-analyzer",
    name="Markdown analyzer",
    triggers=[OnFile("**", kinds=["add", "modify", "move"])],
    input_model=AnalyzeInput,
    settings_model=AnalyzerSettings,
    timeout=1800,
    records_retention_days=RETENTION_DAYS,
)
def analyze_notes(ctx: WorkflowContext[AnalyzeInput]) -> dict[str, Any]:
    """Word count, reading time, outline, link/embed/tag counts, broken links and tasks."""
    settings = ctx.settings or AnalyzerSettings()
    paths, added = notes_to_analyze(ctx)
    analyses: list[dict[str, Any]] = []
    missing: list[str] = []
    for start in range(0, len(paths), BATCH):
        if ctx.cancelled.is_set():
            break
        batch = paths[start : start + BATCH]
        found, gone = analyze_batch(ctx, batch, added, settings.words_per_minute)
        analyses.extend(found)
        missing.extend(gone)
        ctx.report_progress(100 * (start + len(batch)) / len(paths))
    if ctx.input.path is not None and not isinstance(ctx.trigger, FileTrigger):
        # Asked for one note: its analysis is the answer, and its absence an error.
        if not analyses:
            raise NoteNotFoundError(paths[0])
        return analyses[0]
    return {
        "analyzed": len(analyses),
        "missing": missing,
        "notes": analyses[:RESULT_NOTES_LIMIT],
        "truncated": len(analyses) > RESULT_NOTES_LIMIT,
    }


def notes_to_analyze(ctx: WorkflowContext[AnalyzeInput]) -> tuple[list[str], set[str]]:
    """The paths to analyse, and those among them that are new to the vault."""
    if isinstance(ctx.trigger, FileTrigger):
        for event in ctx.trigger.events:
            if isinstance(event, NoteMoved):  # its analyses follow it to its new path
                ctx.records.move_key(event.old_path, event.path)
        added = {
            event.path
            for event in ctx.trigger.events
            if isinstance(event, NoteAdded) and not event.initial  # a first index only finds
        }
        return list(dict.fromkeys(ctx.trigger.paths)), added
    if ctx.input.path is not None:
        return [ctx.vault.vault.check_note_path(ctx.input.path)], set()
    return ctx.note_paths(), set()


def analyze_batch(
    ctx: WorkflowContext[AnalyzeInput], paths: Sequence[str], added: set[str], per_minute: int
) -> tuple[list[dict[str, Any]], list[str]]:
    notes = {path: ctx.load_note(path) for path in paths}
    present = [note for note in notes.values() if note is not None]
    broken = ctx.broken_links([note.path for note in present])
    previous = ctx.records.latest_many([note.path for note in present], kind=KIND)
    analyses = [
        analyze(note, broken.get(note.path, []), per_minute, previous.get(note.path))
        for note in present
    ]
    mark_new(ctx, analyses, previous, added)
    ctx.records.extend(NewRecord(a["path"], a, KIND) for a in analyses)
    return analyses, [path for path, note in notes.items() if note is None]


def analyze(
    note: LoadedNote, broken: list[BrokenLink], per_minute: int, previous: StoredRecord | None
) -> dict[str, Any]:
    parsed = note.parsed
    links, embeds = count_links(parsed)
    tags = list(tag_spellings(parsed.tags).values())
    analysis: dict[str, Any] = {
        "path": note.path,
        "title": parsed.title,
        "words": parsed.word_count,
        "readingMinutes": reading_minutes(parsed.word_count, per_minute),
        "headings": outline(parsed.headings),
        "links": links,
        "embeds": embeds,
        "tagCount": len(tags),
        "tags": tags,
        "brokenLinks": [{"target": b.target, "line": b.line + 1} for b in broken],
        "tasks": {
            "open": parsed.tasks_open,
            "done": parsed.tasks_done,
            "total": parsed.tasks_open + parsed.tasks_done,
        },
        "newTags": [],
        "newBrokenLinks": [],
    }
    if error := note.read_error or parsed.error:
        analysis["error"] = error
    if previous is not None:
        before = {item["target"] for item in previous.data.get("brokenLinks", [])}
        now = dict.fromkeys(b.target for b in broken)
        analysis["newBrokenLinks"] = [target for target in now if target not in before]
    return analysis


def mark_new(
    ctx: WorkflowContext[AnalyzeInput],
    analyses: list[dict[str, Any]],
    previous: dict[str, StoredRecord],
    added: set[str],
) -> None:
    """Fill `newTags` (tags no other note carries) and, for notes new to the vault,
    `newBrokenLinks`.

    A tag is new to the vault when every note carrying it now gained it in this batch: one
    count per tag over the whole cache, never a query per note.
    """
    gains = {
        a["path"]: tags_gained(a, previous.get(a["path"]), a["path"] in added) for a in analyses
    }
    gainers = Counter(normalize_tag(tag) for tags in gains.values() for tag in tags)
    carriers: dict[str, int] = {}
    if gainers:
        carriers = ctx.tag_counts(list(gainers))
    for analysis in analyses:
        keys = [(tag, normalize_tag(tag)) for tag in gains[analysis["path"]]]
        analysis["newTags"] = [tag for tag, key in keys if carriers.get(key, 0) <= gainers[key]]
        if analysis["path"] in added:
            targets = (item["target"] for item in analysis["brokenLinks"])
            analysis["newBrokenLinks"] = list(dict.fromkeys(targets))


def tags_gained(analysis: dict[str, Any], previous: StoredRecord | None, new: bool) -> list[str]:
    """The tags the note has now and had not at its previous analysis (all, for a new note;
    none when there is nothing to compare with)."""
    if new:
        return list(analysis["tags"])
    if previous is None:
        return []
    return tag_changes(previous.data.get("tags", []), analysis["tags"])[0]
