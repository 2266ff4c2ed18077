"""The registry of loaded workflows, with config applied, and the plugins that failed to load.

`Registry.register` refuses a second workflow with an id already taken, loudly: the loader
logs it as an error and lists it among `errors`, which makes the engine (and `health_check`)
report `degraded`. `configure` applies a `[workflows.<id>]` table from the config: `enabled`,
`schedule` (a cron string replacing the declared schedules, `""` for none), `timezone`,
`records_retention_days`, and `settings` (validated by the workflow's settings model when it has
one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import Engine

from weaver.cache.records import RecordFilter, fetch_page
from weaver.engine.definition import (
    OnSchedule,
    Workflow,
    accepts_empty,
    describe_validation_error,
    time_zone,
)
from weaver.engine.workflow_errors import (
    DuplicateWorkflowError,
    WorkflowDefinitionError,
    WorkflowNotFoundError,
)

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class PluginError:
    """A plugin (or a workflow's config) that could not be used, and why."""

    source: str
    error: str

    def __str__(self) -> str:
        return f"{self.source}: {self.error}"


class Registry:
    """Workflows by id, in the order they were registered."""

    def __init__(self) -> None:
        self._workflows: dict[str, Workflow] = {}
        self.errors: list[PluginError] = []

    def register(self, workflow: Workflow) -> None:
        existing = self._workflows.get(workflow.id)
        if existing is not None:
            raise DuplicateWorkflowError(
                f"duplicate workflow id {workflow.id!r}: already registered from "
                f"{existing.source or existing.module}"
            )
        self._workflows[workflow.id] = workflow

    def replace(self, workflow: Workflow) -> None:
        self._workflows[workflow.id] = workflow

    def remove(self, workflow_id: str) -> None:
        self._workflows.pop(workflow_id, None)

    def get(self, workflow_id: str) -> Workflow | None:
        return self._workflows.get(workflow_id)

    def require(self, workflow_id: str) -> Workflow:
        """The workflow, or `WorkflowNotFoundError` naming the ids it probably meant."""
        workflow = self._workflows.get(workflow_id)
        if workflow is None:
            broken = list(dict.fromkeys(error.source for error in self.errors))
            raise WorkflowNotFoundError(workflow_id, self._workflows, broken)
        return workflow

    def add_error(self, source: str, error: str) -> None:
        log.error("workflow plugin skipped", source=source, error=error)
        self.errors.append(PluginError(source, error))

    def __iter__(self) -> Iterator[Workflow]:
        return iter(list(self._workflows.values()))

    def __len__(self) -> int:
        return len(self._workflows)

    def __contains__(self, workflow_id: object) -> bool:
        return workflow_id in self._workflows


def check_known(registry: Registry, db: Engine, workflow_id: str) -> None:
    """`WorkflowNotFoundError`, naming the ids it probably meant, when no workflow has
    `workflow_id` and nothing was ever recorded under it (a removed workflow's records are
    still read). With no workflows loaded it cannot tell, and lets it be."""
    if not len(registry) or workflow_id in registry:
        return
    if fetch_page(db, RecordFilter(workflow_id), limit=1).total == 0:
        registry.require(workflow_id)


class WorkflowOverride(BaseModel):
    """One `[workflows.<id>]` table of the config file."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    schedule: str | None = None
    timezone: str | None = None
    records_retention_days: int | None = Field(default=None, ge=0)
    settings: dict[str, Any] = Field(default_factory=dict)


def apply_overrides(registry: Registry, tables: Mapping[str, Mapping[str, Any]]) -> None:
    """Apply config to every registered workflow; one that config breaks is dropped and listed."""
    for workflow_id in tables:
        if workflow_id not in registry:
            log.warning("config names an unknown workflow", workflow_id=workflow_id)
    for workflow in registry:
        try:
            registry.replace(configure(workflow, tables.get(workflow.id, {})))
        except WorkflowDefinitionError as exc:
            registry.remove(workflow.id)
            registry.add_error(f"config [workflows.{workflow.id}]", str(exc))


def override_problem(table: Mapping[str, Any]) -> tuple[str, Any, str] | None:
    """What is wrong with a `[workflows.<id>]` table as far as can be told without its workflow
    (a key, a type, the cron, the time zone), as (key, value, why), or None: so that
    `load_settings` refuses a bad table before anything runs, rather than the workflow being
    dropped when the plugins load."""
    try:
        override = WorkflowOverride.model_validate(dict(table))
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        return ".".join(str(part) for part in error["loc"]), error["input"], error["msg"]
    try:
        time_zone(override.timezone)
    except WorkflowDefinitionError as exc:
        return "timezone", override.timezone, str(exc)
    if override.schedule and override.schedule.strip():
        try:
            OnSchedule(override.schedule, override.timezone)
        except WorkflowDefinitionError as exc:
            return "schedule", override.schedule, str(exc)
    return None


def configure(workflow: Workflow, table: Mapping[str, Any]) -> Workflow:
    """`workflow` with its config table applied; raises `WorkflowDefinitionError`."""
    try:
        override = WorkflowOverride.model_validate(dict(table))
    except ValidationError as exc:
        raise WorkflowDefinitionError(describe_validation_error(exc)) from None
    schedules = workflow.schedules
    if override.schedule is not None:
        zone = override.timezone or next((s.timezone for s in schedules), None)
        schedules = (OnSchedule(override.schedule, zone),) if override.schedule.strip() else ()
    elif override.timezone is not None:
        schedules = tuple(OnSchedule(s.cron, override.timezone) for s in schedules)
    if schedules and not accepts_empty(workflow.input_model):
        raise WorkflowDefinitionError("a scheduled workflow needs an input model accepting {}")
    return dataclasses.replace(
        workflow,
        enabled=workflow.enabled if override.enabled is None else override.enabled,
        schedules=schedules,
        records_retention_days=(
            workflow.records_retention_days
            if override.records_retention_days is None
            else override.records_retention_days
        ),
        settings=_settings(workflow.settings_model, override.settings),
    )


def _settings(model: type[BaseModel] | None, values: dict[str, Any]) -> Any:
    if model is None:
        return dict(values)
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise WorkflowDefinitionError(f"settings: {describe_validation_error(exc)}") from None
