"""The records tool: get_workflow_records, what workflows recorded for later (the change log, each
note's analysis, a concept's versions, task completions, spec reviews). A thin edge over
`weaver.cache.records.fetch_page`, the same call `weaver records` makes.

It reads the cache only, so it answers with or without a running workflow engine.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from weaver.cache.records import RecordFilter, fetch_page
from weaver.engine import WorkflowEngine
from weaver.engine.payloads import WorkflowRecordsData
from weaver.engine.registry import check_known
from weaver.mcp_server.arguments import Filter, RecordLimit, RecordOffset, Time
from weaver.mcp_server.catalog import tool
from weaver.runtime.state import ServerState

GET_WORKFLOW_RECORDS = """What the workflows stored (change log, note analyses, concept timelines,
completed tasks, reviews, digests), newest first.

Built-in workflows record: file-change-logger a `change` per file event (kind, path, oldPath,
size, hash, time); markdown-analyzer an `analysis` per note (words, readingMinutes, headings,
links, embeds, tags, brokenLinks, tasks, newTags, newBrokenLinks); concept-tracker a `version`
per change of a concept note (words, wordsAdded/Removed, linksAdded/Removed,
tagsAdded/Removed); file-deletion-monitor a `deletion` (what was deleted and the notes now
holding broken links to it); proof-task-complete a `completion` (taskId, name, durationMs);
proof-spec-kit-review a `review` (findings with severity); proof-daily-digest each digest
written. Some also keep a `state` record (what the next run compares with).

Returns `records` (id, workflowId, key: usually a note path, kind, recordedAt in Unix epoch
milliseconds, executionId, data), with `total`, the `limit`/`offset` applied and `hasMore`. An
id no workflow has answers "Workflow not found". `key` keeps one note's records (a concept's
timeline; the latest analysis of a note with limit 1); `kind` one sort; `since` (inclusive) and
`until` (exclusive) are Unix epoch milliseconds or ISO dates ('2026-11-20'). Example:
{"workflowId": "concept-tracker", "key": "Concepts/Graph.md"}."""


@tool("Workflow records", GET_WORKFLOW_RECORDS, toolset="records", wait_ready=False)
def get_workflow_records(
    state: ServerState,
    workflowId: Annotated[str, Field(description="The workflow whose records to read")],
    key: Annotated[Filter, Field(description="Only records about this (a note path)")] = None,
    kind: Annotated[Filter, Field(description="Only records of this kind")] = None,
    since: Annotated[
        Time, Field(description="Recorded at or after (epoch ms, or ISO date or date-time)")
    ] = None,
    until: Annotated[
        Time, Field(description="Recorded before (epoch ms, or ISO date or date-time)")
    ] = None,
    limit: RecordLimit = 50,
    offset: RecordOffset = 0,
) -> WorkflowRecordsData:
    where = RecordFilter(workflowId, key, kind, since, until)
    page = fetch_page(state.app.db, where, limit, offset)
    engine = state.engine
    if page.total == 0 and isinstance(engine, WorkflowEngine):
        # A misspelt id is not "no records" (a removed workflow's records still are).
        check_known(engine.registry, state.app.db, workflowId)
    return WorkflowRecordsData.of(page)
