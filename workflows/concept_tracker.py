"""`concept-tracker`: how each concept note evolves, one version at a time.

A concept is a note whose path matches one of the `paths` globs (default `Concepts/**`) or whose
frontmatter says `type: concept`. Each saved change of one is a version (kind `version`, keyed
by the note's path): how many words it has, the words added and removed (occurrences, so a
reworded sentence counts both ways), and the links and tags added and removed. A rename carries
the timeline to the new path and is a version of its own; a deletion ends it with one.
`get_workflow_records {"workflowId": "concept-tracker", "key": "Concepts/Graph.md"}` reads the
timeline back, newest first.

What the next version is compared with is kept as one `state` record per concept. By hand,
`{"path": ...}` records a version of one concept and `{}` of every concept (the first run over
an existing vault sets the baselines).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from weaver.engine import (
    FileTrigger,
    LoadedNote,
    NewRecord,
    NoteFacts,
    NoteMoved,
    OnFile,
    StoredRecord,
    VaultEvent,
    WorkflowContext,
    WorkflowDefinitionError,
    compile_glob,
    link_targets,
    set_changes,
    tag_changes,
    tag_spellings,
    word_counts,
    words_changed,
    workflow,
)

VERSION = "version"
STATE = "state"
EMPTY_STATE: dict[str, Any] = {"hash": "", "version": 0, "words": {}, "links": [], "tags": []}


class TrackInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(
        default=None, description="The concept note to record; leave it out for every concept"
    )


class ConceptSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(default_factory=lambda: ["Concepts/**"])
    note_type: str = "concept"

    @field_validator("paths")
    @classmethod
    def _valid_globs(cls, paths: list[str]) -> list[str]:
        for pattern in paths:
            try:
                compile_glob(pattern)
            except WorkflowDefinitionError as exc:
                raise ValueError(str(exc)) from None
        return paths

    def is_concept(self, path: str, note_type: str | None) -> bool:
        if note_type is not None and note_type.casefold() == self.note_type.casefold():
            return True
        return any(compile_glob(pattern).match(path) for pattern in self.paths)


@dataclass(frozen=True, slots=True)
class Change:
    """A change to look at: a file event's kind (or "manual"), its path, a move's old path."""

    kind: str
    path: str
    old_path: str | None = None


@workflow(
    id="concept-tracker",
    name="Concept tracker",
    triggers=[OnFile("**")],
    input_model=TrackInput,
    settings_model=ConceptSettings,
    timeout=600,
)
def track_concepts(ctx: WorkflowContext[TrackInput]) -> dict[str, Any]:
    """Record each version of a concept note: words, links and tags added and removed."""
    settings = ctx.settings or ConceptSettings()
    changes = changes_to_track(ctx, settings)
    facts = ctx.note_facts([c.path for c in changes if c.kind != "delete"])
    states = ctx.records.latest_many([c.path for c in changes], kind=STATE)
    versions: list[dict[str, Any]] = []
    snapshots: list[NewRecord] = []
    for change in changes:
        tracked = track(ctx, change, facts.get(change.path), states.get(change.path), settings)
        if tracked is not None:
            versions.append(tracked[0])
            snapshots.append(NewRecord(change.path, tracked[1], STATE))
    ctx.records.extend(NewRecord(v["path"], v, VERSION) for v in versions)
    ctx.records.replace_many(snapshots)
    return {"versions": versions}


def changes_to_track(ctx: WorkflowContext[TrackInput], settings: ConceptSettings) -> list[Change]:
    """The file events (a rename moves the concept's records to its new path first), or by
    hand the note asked for or every concept of the vault."""
    if isinstance(ctx.trigger, FileTrigger):
        return [follow(ctx, event) for event in ctx.trigger.events]
    if ctx.input.path is not None:
        return [Change("manual", ctx.vault.vault.check_note_path(ctx.input.path))]
    facts = ctx.note_facts(None)
    concepts = [p for p, fact in facts.items() if settings.is_concept(p, fact.type)]
    return [Change("manual", path) for path in sorted(concepts)]


def follow(ctx: WorkflowContext[TrackInput], event: VaultEvent) -> Change:
    if isinstance(event, NoteMoved):
        ctx.records.move_key(event.old_path, event.path)
        return Change("move", event.path, event.old_path)
    return Change(event.kind, event.path)


def track(
    ctx: WorkflowContext[TrackInput],
    change: Change,
    fact: NoteFacts | None,
    state: StoredRecord | None,
    settings: ConceptSettings,
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(version, new state) when this change makes a version of a concept, else None."""
    if change.kind == "delete":
        return None if state is None else deletion(change.path, state.data)
    if fact is None or not settings.is_concept(change.path, fact.type):
        return None
    if state is not None and state.data.get("hash") == fact.content_hash and not change.old_path:
        return None  # saved again without a change, or recorded by hand twice
    note = ctx.load_note(change.path)
    if note is None:
        return None
    return new_version(note, fact, change, None if state is None else state.data)


def new_version(
    note: LoadedNote, fact: NoteFacts, change: Change, state: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The version record of the note as it is now, and the state the next one compares with."""
    parsed = note.parsed
    words = word_counts(parsed.body)
    links = sorted(link_targets(parsed))
    tags = list(tag_spellings(parsed.tags).values())
    before = state or EMPTY_STATE
    words_added, words_removed = words_changed(before["words"], words)
    links_added, links_removed = set_changes(before["links"], links)
    tags_added, tags_removed = tag_changes(before["tags"], tags)
    number = int(before["version"]) + 1
    version: dict[str, Any] = {
        "path": note.path,
        "version": number,
        "event": change.kind,
        "first": state is None,
        "title": parsed.title,
        "words": parsed.word_count,
        "wordsAdded": words_added,
        "wordsRemoved": words_removed,
        "linksAdded": links_added,
        "linksRemoved": links_removed,
        "tagsAdded": tags_added,
        "tagsRemoved": tags_removed,
    }
    if change.old_path:
        version["oldPath"] = change.old_path
    snapshot = {"hash": fact.content_hash, "version": number, "words": dict(words)}
    return version, {**snapshot, "links": links, "tags": tags}


def deletion(path: str, state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The last version of a deleted concept: everything it had, removed. Its state is emptied,
    so a note restored at this path starts again from nothing."""
    number = int(state.get("version", 0)) + 1
    version = {
        "path": path,
        "version": number,
        "event": "delete",
        "first": False,
        "words": 0,
        "wordsAdded": 0,
        "wordsRemoved": sum(state.get("words", {}).values()),
        "linksAdded": [],
        "linksRemoved": list(state.get("links", [])),
        "tagsAdded": [],
        "tagsRemoved": list(state.get("tags", [])),
    }
    return version, {**EMPTY_STATE, "version": number}
