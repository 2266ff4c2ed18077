"""`weaver.engine` is the plugin API: what it exports is pinned here, so that adding or removing
a name is a decision (a changed plugin API), not an accident of an import (after httpx's
tests/test_exported_members.py)."""

from __future__ import annotations

import weaver.engine

EXPORTED = {
    # the engine and its registry
    "ENTRY_POINT_GROUP",
    "Registry",
    "WorkflowEngine",
    "load_registry",
    # defining a workflow
    "NoInput",
    "OnFile",
    "OnSchedule",
    "RunPolicy",
    "Workflow",
    "compile_glob",
    "workflow",
    # what a running workflow gets
    "CacheReader",
    "FileTrigger",
    "ManualTrigger",
    "ScheduleTrigger",
    "Trigger",
    "WorkflowContext",
    # values read and written through the context
    "BrokenLink",
    "ExecutionRecord",
    "FoundTask",
    "NewRecord",
    "NoteFacts",
    "StoredRecord",
    "TaskPage",
    "WorkflowRecords",
    # vault events
    "NoteAdded",
    "NoteDeleted",
    "NoteModified",
    "NoteMoved",
    "VaultEvent",
    # errors
    "DuplicateWorkflowError",
    "ExecutionNotFoundError",
    "InvalidInputError",
    "NoteNotFoundError",
    "TaskQueryError",
    "PluginError",
    "WeaverError",
    "WorkflowDefinitionError",
    "WorkflowDisabledError",
    "WorkflowError",
    "WorkflowNotFoundError",
    "WorkflowRequestError",
    # the analysis kit
    "DEFAULT_WORDS_PER_MINUTE",
    "LoadedNote",
    "Marker",
    "code",
    "count_links",
    "find_markers",
    "format_duration",
    "link_targets",
    "missing_fields",
    "missing_sections",
    "normalize_tag",
    "note_link",
    "outline",
    "parse_moment",
    "reading_minutes",
    "set_changes",
    "tag_changes",
    "tag_spellings",
    "word_counts",
    "words_changed",
}


def test_the_plugin_api_exports_exactly_these_names() -> None:
    assert set(weaver.engine.__all__) == EXPORTED
    assert len(weaver.engine.__all__) == len(EXPORTED)  # no name listed twice


def test_every_exported_name_exists_and_is_public() -> None:
    for name in weaver.engine.__all__:
        assert not name.startswith("_"), name
        assert getattr(weaver.engine, name, None) is not None, name


def test_the_context_reads_the_cache_through_typed_methods() -> None:
    reads = {"note_facts", "note_paths", "broken_links", "broken_links_to", "tag_counts"}
    assert reads | {"failures", "load_note"} <= set(dir(weaver.engine.WorkflowContext))
