"""What the engine's core calls return: the `data` of the MCP workflow tools, field for field.

The MCP tools wrap these in their envelope and publish them as output schemas; the CLI prints
`to_wire()` for `--json`. Field names are snake_case here and camelCase on the wire, as the
contract spells them; every time is Unix epoch milliseconds. Fields beyond the contract are
additions (a client reading only the contract's fields sees exactly the contract).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from weaver.cache.executions import ExecutionRecord
from weaver.cache.records import StoredRecord
from weaver.engine.definition import Workflow
from weaver.paging import Page


class Wire(BaseModel):
    # Built from the core's dataclasses by attribute where the names match (`model_validate`).
    # `defer_build`: a model's validator is built when first used, not when its module is
    # imported: a server imports hundreds of them, most unused for a while or for good.
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, from_attributes=True, defer_build=True
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class TriggerWorkflowData(Wire):
    execution_id: str
    workflow_id: str
    workflow_name: str
    mode: Literal["sync", "async"]
    status: str = Field(description="sync: completed | failed | cancelled; async: pending/running")
    duration: int | None = Field(default=None, description="Run time in ms (sync mode)")
    message: str
    result: Any = Field(default=None, description="What the workflow returned (sync mode)")
    error: str | None = Field(default=None, description="Why it failed (sync mode)")

    @classmethod
    def finished(cls, record: ExecutionRecord) -> TriggerWorkflowData:
        return cls(
            execution_id=record.id,
            workflow_id=record.workflow_id,
            workflow_name=record.workflow_name,
            mode="sync",
            status=record.status,
            duration=record.duration,
            message=record.message or record.status,
            result=record.result,
            error=record.error,
        )

    @classmethod
    def started(cls, record: ExecutionRecord, message: str) -> TriggerWorkflowData:
        return cls(
            execution_id=record.id,
            workflow_id=record.workflow_id,
            workflow_name=record.workflow_name,
            mode="async",
            status=record.status,
            message=message,
        )


class TriggerInfo(Wire):
    kind: str = Field(description="manual | file | schedule")
    detail: dict[str, Any]


class InterruptionInfo(Wire):
    attempt: int = Field(description="The attempt its engine stopped under")
    at: int = Field(description="When it was recorded interrupted")
    reason: str


class WorkflowStatusData(Wire):
    execution_id: str
    workflow_id: str
    workflow_name: str
    status: str = Field(description="pending | running | completed | failed | cancelled")
    progress: int = Field(description="0-100")
    message: str | None
    attempt: int = Field(description="1 for the first attempt, more after retries; 0 if pending")
    start_time: int | None = Field(description="When it started running; null while pending")
    end_time: int | None
    duration: int | None = Field(description="ms; null until it ends")
    result: Any
    error: str | None
    traceback: str | None
    trigger: TriggerInfo
    input: dict[str, Any]
    created_time: int = Field(description="When it was asked for")
    process: str | None = Field(description="host:pid of the process that ran it")
    interruptions: list[InterruptionInfo] = Field(
        default_factory=list,
        description="Attempts cut short by their engine stopping, oldest first: each was "
        "queued again and resumed as the next attempt",
    )

    @classmethod
    def of(cls, record: ExecutionRecord) -> WorkflowStatusData:
        return cls(
            execution_id=record.id,
            workflow_id=record.workflow_id,
            workflow_name=record.workflow_name,
            status=record.status,
            progress=record.progress,
            message=record.message,
            attempt=record.attempt,
            start_time=record.started,
            end_time=record.finished,
            duration=record.duration,
            result=record.result,
            error=record.error,
            traceback=record.traceback,
            trigger=TriggerInfo(kind=record.trigger_kind, detail=record.trigger_detail),
            input=record.input,
            created_time=record.created,
            process=record.process,
            interruptions=[InterruptionInfo.model_validate(item) for item in record.interruptions],
        )


class ExecutionSummary(Wire):
    execution_id: str
    workflow_id: str
    workflow_name: str
    status: str
    start_time: int | None
    end_time: int | None
    duration: int | None
    error: str | None
    trigger: str = Field(description="manual | file | schedule")
    created_time: int
    interrupted: int = Field(
        default=0,
        description="How many of its attempts an engine stopping cut short (each resumed)",
    )

    @classmethod
    def of(cls, record: ExecutionRecord) -> ExecutionSummary:
        return cls(
            execution_id=record.id,
            workflow_id=record.workflow_id,
            workflow_name=record.workflow_name,
            status=record.status,
            start_time=record.started,
            end_time=record.finished,
            duration=record.duration,
            error=record.error,
            trigger=record.trigger_kind,
            created_time=record.created,
            interrupted=len(record.interruptions),
        )


class WorkflowHistoryData(Wire):
    executions: list[ExecutionSummary]
    total: int
    limit: int
    offset: int
    has_more: bool


class FileTriggerInfo(Wire):
    paths: list[str]
    kinds: list[str]


class ScheduleInfo(Wire):
    cron: str
    timezone: str | None = Field(description="null: the machine's local time zone")


class PolicyInfo(Wire):
    timeout: float | None = Field(description="Seconds per attempt; null for no limit")
    retries: int
    retry_delay: float
    max_concurrent: int


class WorkflowInfo(Wire):
    id: str
    name: str
    description: str
    enabled: bool
    triggers: list[str] = Field(description="manual, file-change, schedule")
    last_executed: int | None
    execution_count: int
    input_schema: dict[str, Any] = Field(description="JSON Schema of the workflow's input")
    file_triggers: list[FileTriggerInfo]
    schedules: list[ScheduleInfo]
    policy: PolicyInfo
    records_retention_days: int = Field(
        description="Days a record superseded by a newer one of its key and kind is kept; 0: all"
    )
    source: str

    @classmethod
    def of(cls, workflow: Workflow, last_executed: int | None, count: int) -> WorkflowInfo:
        policy = workflow.policy
        return cls(
            id=workflow.id,
            name=workflow.name,
            description=workflow.description,
            enabled=workflow.enabled,
            triggers=workflow.triggers,
            last_executed=last_executed,
            execution_count=count,
            input_schema=workflow.input_model.model_json_schema(),
            file_triggers=[
                FileTriggerInfo(paths=list(t.paths), kinds=sorted(t.kinds))
                for t in workflow.on_file
            ],
            schedules=[ScheduleInfo(cron=s.cron, timezone=s.timezone) for s in workflow.schedules],
            policy=PolicyInfo(
                timeout=policy.timeout,
                retries=policy.retries,
                retry_delay=policy.retry_delay,
                max_concurrent=policy.max_concurrent,
            ),
            records_retention_days=workflow.records_retention_days,
            source=workflow.source,
        )


class PluginErrorInfo(Wire):
    source: str
    error: str


class ListWorkflowsData(Wire):
    workflows: list[WorkflowInfo]
    count: int
    errors: list[PluginErrorInfo] = Field(
        description="Plugins that failed to load (the server reports degraded while any do)"
    )


class RecordInfo(Wire):
    id: int
    workflow_id: str
    key: str = Field(description="What the record is about, usually a note path")
    kind: str = Field(description="Its sort, e.g. change, analysis, version, completion")
    recorded_at: int = Field(description="Unix epoch milliseconds")
    execution_id: str | None = Field(description="The execution that recorded it")
    data: dict[str, Any]


class WorkflowRecordsData(Wire):
    records: list[RecordInfo] = Field(description="Newest first")
    total: int = Field(description="Records matching, over all pages")
    limit: int
    offset: int
    has_more: bool

    @classmethod
    def of(cls, page: Page[StoredRecord]) -> WorkflowRecordsData:
        return cls(
            records=[RecordInfo.model_validate(record) for record in page.items],
            total=page.total,
            limit=page.limit,
            offset=page.offset,
            has_more=page.has_more,
        )
