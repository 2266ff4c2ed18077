"""The workflow engine: plugin workflows run by hand, on file events and on schedules.

    definition  the `@workflow(...)` decorator, `OnFile`, `OnSchedule`, `RunPolicy`
    registry    `Registry` (refuses duplicate ids), `[workflows.<id>]` config overrides
    loader      plugins from folders (by path) and the `weaver.workflows` entry points
    context     `WorkflowContext` and the triggers a workflow can be started by
                (its `records` are `weaver.cache.records.WorkflowRecords`)
    runner      one attempt: sync or async, bounded by its timeout
    engine      `WorkflowEngine`: the queue, the workers, and the core behind MCP and CLI
    payloads    what the core returns (the MCP tools' `data`)
    processes   which process ran an execution, and whether it is gone
    errors      the engine's part of the `WeaverError` tree
    scheduler   APScheduler jobs that queue scheduled executions
    analysis    the note analysis the built-in workflows share

A plugin needs only this package's top level:

    from weaver.engine import OnFile, WorkflowContext, workflow
"""

from weaver.cache.records import NewRecord, StoredRecord, WorkflowRecords
from weaver.engine.context import (
    CacheReader,
    FileTrigger,
    ManualTrigger,
    ScheduleTrigger,
    Trigger,
    WorkflowContext,
)
from weaver.engine.definition import NoInput, OnFile, OnSchedule, RunPolicy, Workflow, workflow
from weaver.engine.engine import WorkflowEngine, hosted_engine
from weaver.engine.errors import (
    DuplicateWorkflowError,
    ExecutionNotFoundError,
    InvalidInputError,
    WorkflowDefinitionError,
    WorkflowDisabledError,
    WorkflowError,
    WorkflowNotFoundError,
    WorkflowRequestError,
)
from weaver.engine.loader import ENTRY_POINT_GROUP, load_registry
from weaver.engine.registry import PluginError, Registry

__all__ = [
    "ENTRY_POINT_GROUP",
    "CacheReader",
    "DuplicateWorkflowError",
    "ExecutionNotFoundError",
    "FileTrigger",
    "InvalidInputError",
    "ManualTrigger",
    "NewRecord",
    "NoInput",
    "OnFile",
    "OnSchedule",
    "PluginError",
    "Registry",
    "RunPolicy",
    "ScheduleTrigger",
    "StoredRecord",
    "Trigger",
    "Workflow",
    "WorkflowContext",
    "WorkflowDefinitionError",
    "WorkflowDisabledError",
    "WorkflowEngine",
    "WorkflowError",
    "WorkflowNotFoundError",
    "WorkflowRecords",
    "WorkflowRequestError",
    "hosted_engine",
    "load_registry",
    "workflow",
]
