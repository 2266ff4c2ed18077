"""The workflow engine: plugin workflows run by hand, on file events and on schedules.

    definition  the `@workflow(...)` decorator, `OnFile`, `OnSchedule`, `RunPolicy`
    registry    `Registry` (refuses duplicate ids), `[workflows.<id>]` config overrides
    loader      plugins from folders (by path) and the `weaver.workflows` entry points
    context     `WorkflowContext` and the triggers a workflow can be started by
                (its `records` are `weaver.cache.records.WorkflowRecords`)
    runner      one attempt: sync or async, bounded by its timeout
    engine      `WorkflowEngine`: the core behind MCP and CLI (trigger, status, history,
                cancel, the change feed), over the parts below
    dispatch    one strategy per run mode: threads, inline, queue (`job_dispatch`: jobs)
    runs        the `executions` table as the queue: enqueue, claim, requeue, recover
    execution   one claimed run: attempts, their context, recording its end
    live        this process's runs under way: cancel switches, waiters, progress
    run_ends    ends the cache refused, tried again in the background
    retention   pruning of run history, records and the change feed
    jobs        the job system's glue (PostgreSQL); `worker_schedules` its schedules
    payloads    what the core returns (the MCP tools' `data`)
    processes   which process ran an execution, and whether it is gone
    errors      the engine's part of the `WeaverError` tree
    scheduler   APScheduler jobs that queue scheduled executions
    analysis    the note analysis the built-in workflows share

A plugin needs only this package's top level, and the built-in workflows import nothing else
of Weaver (a test holds them to it):

    from weaver.engine import OnFile, WorkflowContext, workflow

Besides the engine's own names it re-exports what a workflow reads and writes: the cache's value
types (`NoteFacts`, `BrokenLink`, `ExecutionRecord`, records, a `TaskPage` of `FoundTask`s), the
vault events, the errors a workflow raises or meets (`NoteNotFoundError`, `TaskQueryError`), and
the analysis kit (`weaver.engine.analysis`).
`__all__` is pinned by tests/engine/test_exported_members.py: a change to it is a change to the
plugin API.
"""

from weaver.cache.executions import ExecutionRecord
from weaver.cache.note_facts import BrokenLink, NoteFacts
from weaver.cache.records import NewRecord, StoredRecord, WorkflowRecords
from weaver.cache.task_queries import FoundTask, TaskPage
from weaver.engine.analysis import (
    DEFAULT_WORDS_PER_MINUTE,
    LoadedNote,
    Marker,
    code,
    count_links,
    find_markers,
    format_duration,
    link_targets,
    missing_fields,
    missing_sections,
    note_link,
    outline,
    parse_moment,
    reading_minutes,
    set_changes,
    tag_changes,
    tag_spellings,
    word_counts,
    words_changed,
)
from weaver.engine.context import (
    CacheReader,
    FileTrigger,
    ManualTrigger,
    ScheduleTrigger,
    Trigger,
    WorkflowContext,
)
from weaver.engine.definition import (
    NoInput,
    OnFile,
    OnSchedule,
    RunPolicy,
    Workflow,
    compile_glob,
    workflow,
)
from weaver.engine.engine import WorkflowEngine
from weaver.engine.loader import ENTRY_POINT_GROUP, load_registry
from weaver.engine.registry import PluginError, Registry
from weaver.engine.workflow_errors import (
    DuplicateWorkflowError,
    ExecutionNotFoundError,
    InvalidInputError,
    WorkflowDefinitionError,
    WorkflowDisabledError,
    WorkflowError,
    WorkflowNotFoundError,
    WorkflowRequestError,
)
from weaver.errors import NoteNotFoundError, TaskQueryError, WeaverError
from weaver.markdown.patterns import normalize_tag
from weaver.vault.events import NoteAdded, NoteDeleted, NoteModified, NoteMoved, VaultEvent

__all__ = [
    "DEFAULT_WORDS_PER_MINUTE",
    "ENTRY_POINT_GROUP",
    "BrokenLink",
    "CacheReader",
    "DuplicateWorkflowError",
    "ExecutionNotFoundError",
    "ExecutionRecord",
    "FileTrigger",
    "FoundTask",
    "InvalidInputError",
    "LoadedNote",
    "ManualTrigger",
    "Marker",
    "NewRecord",
    "NoInput",
    "NoteAdded",
    "NoteDeleted",
    "NoteFacts",
    "NoteModified",
    "NoteMoved",
    "NoteNotFoundError",
    "OnFile",
    "OnSchedule",
    "PluginError",
    "Registry",
    "RunPolicy",
    "ScheduleTrigger",
    "StoredRecord",
    "TaskPage",
    "TaskQueryError",
    "Trigger",
    "VaultEvent",
    "WeaverError",
    "Workflow",
    "WorkflowContext",
    "WorkflowDefinitionError",
    "WorkflowDisabledError",
    "WorkflowEngine",
    "WorkflowError",
    "WorkflowNotFoundError",
    "WorkflowRecords",
    "WorkflowRequestError",
    "code",
    "compile_glob",
    "count_links",
    "find_markers",
    "format_duration",
    "link_targets",
    "load_registry",
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
    "workflow",
]
