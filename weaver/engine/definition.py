"""Declaring a workflow: the `@workflow(...)` decorator and the values it records.

    @workflow(
        id="concept-tracker",
        name="Concept tracker",
        triggers=[OnFile("concepts/**", kinds=["add", "modify"]), OnSchedule("0 7 * * 1-5")],
        input_model=TrackerInput,
        timeout=60,
        retries=2,
    )
    def track(ctx: WorkflowContext[TrackerInput]) -> dict[str, int]: ...

The decorator only describes: it returns a `Workflow` (still callable like the function) and
registers nothing. The loader finds `Workflow` values in a plugin module and hands them to a
`Registry`, which refuses a duplicate id. Every workflow can also be triggered by hand; the
input model must accept `{}` when a file event or a schedule starts it, since those pass none.
Declarations are checked here, at import time of the plugin, so a bad cron or glob is a plugin
that fails to load rather than a job that fails at 3 a.m.

`records_retention_days` bounds a workflow that files a record on every save: a record
superseded by a newer one of its key and kind is dropped that many days later (the engine
prunes at start and hourly; the newest of each key and kind stays). 0, the default, keeps all.
"""

from __future__ import annotations

import inspect
import re
import zoneinfo
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeAlias

from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, ValidationError

from weaver.engine.workflow_errors import InvalidInputError, WorkflowDefinitionError
from weaver.vault.events import VaultEvent

if TYPE_CHECKING:
    from weaver.engine.context import WorkflowContext

EVENT_KINDS = ("add", "modify", "delete", "move")
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
DEFAULT_TIMEOUT = 300.0
# A retry never waits longer than this, however many attempts came before.
MAX_RETRY_DELAY = 300.0

WorkflowFunction: TypeAlias = Callable[["WorkflowContext[Any]"], Any | Awaitable[Any]]


class NoInput(BaseModel):
    """The input model of a workflow that takes none: only `{}` is valid."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True)
class OnFile:
    """Start the workflow when notes whose path matches one of `paths` change.

    Globs are matched against the whole vault-relative path: `*` and `?` stay within one folder
    level, `**` spans any number of levels (`concepts/**` matches `concepts/a.md` and
    `concepts/x/y.md`, never `inbox/x.md`; `**/*.md` matches everywhere; `*.md` only at the
    root). A move matches when either its old or its new path does. `kinds` is any of add,
    modify, delete, move.
    """

    paths: tuple[str, ...]
    kinds: frozenset[str]

    def __init__(self, *paths: str, kinds: Iterable[str] = EVENT_KINDS) -> None:
        chosen = paths or ("**",)
        kind_set = frozenset(kinds)
        if unknown := sorted(kind_set - set(EVENT_KINDS)):
            raise WorkflowDefinitionError(f"unknown file event kind {unknown[0]!r}")
        if not kind_set:
            raise WorkflowDefinitionError("OnFile needs at least one event kind")
        for pattern in chosen:
            compile_glob(pattern)
        object.__setattr__(self, "paths", tuple(chosen))
        object.__setattr__(self, "kinds", kind_set)

    def matches(self, event: VaultEvent) -> bool:
        if event.kind not in self.kinds:
            return False
        candidates = [event.path]
        if event.kind == "move":
            candidates.append(getattr(event, "old_path", ""))
        return any(compile_glob(p).match(c) for p in self.paths for c in candidates)


@dataclass(frozen=True, slots=True)
class OnSchedule:
    """Start the workflow on a cron schedule, in `timezone` (the machine's own when None).

    Five fields (minute hour day month weekday) with standard crontab meaning, weekday 0 or 7
    being Sunday; six fields put seconds first (`*/10 * * * * *`).
    """

    cron: str
    timezone: str | None = None

    def __post_init__(self) -> None:
        self.build_trigger()

    def build_trigger(self) -> CronTrigger:
        return cron_trigger(self.cron, self.timezone)


@dataclass(frozen=True, slots=True)
class RunPolicy:
    """How one execution runs: `timeout` seconds per attempt (None: no limit), `retries` extra
    attempts after a failure, waiting `retry_delay` seconds before the first retry and twice as
    long before each next one, and at most `max_concurrent` executions of the workflow at once
    (across processes sharing the cache)."""

    timeout: float | None = DEFAULT_TIMEOUT
    retries: int = 0
    retry_delay: float = 1.0
    max_concurrent: int = 1

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            raise WorkflowDefinitionError("timeout must be positive (or None for no limit)")
        if self.retries < 0 or self.retry_delay < 0:
            raise WorkflowDefinitionError("retries and retry_delay cannot be negative")
        if self.max_concurrent < 1:
            raise WorkflowDefinitionError("max_concurrent must be at least 1")

    def delay_before(self, attempt: int) -> float:
        """Seconds to wait before `attempt` (2 for the first retry)."""
        return float(min(self.retry_delay * 2 ** max(attempt - 2, 0), MAX_RETRY_DELAY))


@dataclass(frozen=True)
class Workflow:
    """A declared workflow. `source` and `settings` are filled in when it is registered."""

    id: str
    name: str
    description: str
    fn: WorkflowFunction
    input_model: type[BaseModel]
    settings_model: type[BaseModel] | None
    on_file: tuple[OnFile, ...]
    schedules: tuple[OnSchedule, ...]
    enabled: bool
    policy: RunPolicy
    module: str
    # Days a record superseded by a newer one of its key and kind is kept; 0 keeps them all.
    records_retention_days: int = 0
    source: str = ""
    settings: Any = field(default=None, compare=False)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    @property
    def triggers(self) -> list[str]:
        """Trigger types, as `list_workflows` names them."""
        kinds = ["manual"]
        if self.on_file:
            kinds.append("file-change")
        if self.schedules:
            kinds.append("schedule")
        return kinds

    def matches(self, event: VaultEvent) -> bool:
        return any(trigger.matches(event) for trigger in self.on_file)

    def validate_input(self, data: object) -> BaseModel:
        """The input as the workflow's model, or `InvalidInputError` saying what is wrong."""
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise InvalidInputError(self.id, f"expected a JSON object, got {type(data).__name__}")
        try:
            return self.input_model.model_validate(data)
        except ValidationError as exc:
            raise InvalidInputError(self.id, describe_validation_error(exc)) from None

    def __call__(self, ctx: WorkflowContext[Any]) -> Any:
        """Call the function itself, e.g. from a unit test of the plugin."""
        return self.fn(ctx)


def workflow(
    *,
    id: str,
    name: str | None = None,
    description: str | None = None,
    triggers: Sequence[OnFile | OnSchedule] = (),
    input_model: type[BaseModel] | None = None,
    settings_model: type[BaseModel] | None = None,
    enabled: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT,
    retries: int = 0,
    retry_delay: float = 1.0,
    max_concurrent: int = 1,
    records_retention_days: int = 0,
) -> Callable[[WorkflowFunction], Workflow]:
    """Declare a workflow; see the module docstring. Raises `WorkflowDefinitionError`."""
    if not ID_PATTERN.fullmatch(id):
        raise WorkflowDefinitionError(
            f"invalid workflow id {id!r}: letters, digits, '.', '_' and '-' only"
        )
    if records_retention_days < 0:
        raise WorkflowDefinitionError(f"{id}: records_retention_days cannot be negative")
    policy = RunPolicy(timeout, retries, retry_delay, max_concurrent)
    on_file = tuple(t for t in triggers if isinstance(t, OnFile))
    schedules = tuple(t for t in triggers if isinstance(t, OnSchedule))
    if len(on_file) + len(schedules) != len(triggers):
        raise WorkflowDefinitionError(f"{id}: triggers must be OnFile or OnSchedule values")
    model = input_model or NoInput
    if (on_file or schedules) and not accepts_empty(model):
        raise WorkflowDefinitionError(
            f"{id}: file and schedule triggers pass no input, so every field of "
            f"{model.__name__} needs a default"
        )

    def decorate(fn: WorkflowFunction) -> Workflow:
        if not callable(fn):
            raise WorkflowDefinitionError(f"{id}: @workflow decorates a function")
        doc = inspect.getdoc(fn) or ""
        return Workflow(
            id=id,
            name=name or id,
            description=description if description is not None else doc.split("\n\n")[0],
            fn=fn,
            input_model=model,
            settings_model=settings_model,
            on_file=on_file,
            schedules=schedules,
            enabled=enabled,
            policy=policy,
            module=getattr(fn, "__module__", "") or "",
            records_retention_days=records_retention_days,
        )

    return decorate


def accepts_empty(model: type[BaseModel]) -> bool:
    try:
        model.model_validate({})
    except ValidationError:
        return False
    return True


def describe_validation_error(exc: ValidationError) -> str:
    """`count: Input should be a valid integer; path: Field required`."""
    parts = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "input"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching whole vault-relative paths, with `**` spanning folder levels."""
    if not pattern or pattern.startswith("/") or "\\" in pattern:
        raise WorkflowDefinitionError(
            f"invalid path glob {pattern!r}: vault-relative, '/'-separated"
        )
    parts = pattern.split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
        else:
            out.append(_glob_segment(part) + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z")


def _glob_segment(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append(f"[{'^' if negate else ''}{re.escape(body).replace(chr(92) + '-', '-')}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def cron_trigger(expression: str, timezone: str | None) -> CronTrigger:
    """An APScheduler trigger for a crontab expression, weekday numbers meaning what cron means.

    APScheduler 3 counts weekdays from Monday = 0 (its documented historical mistake), so a
    crontab `1-5` would run Tuesday to Saturday: numeric weekdays are rewritten as names first.
    """
    fields = expression.split()
    if len(fields) not in (5, 6):
        raise WorkflowDefinitionError(
            f"invalid cron {expression!r}: 5 fields (or 6 with seconds first)"
        )
    second = fields[0] if len(fields) == 6 else "0"
    minute, hour, day, month, weekday = fields[-5:]
    zone = time_zone(timezone)
    try:
        return CronTrigger(
            second=second,
            minute=minute,
            hour=hour,
            day=day,
            month=month,
            day_of_week=crontab_weekdays(weekday),
            timezone=zone,
        )
    except ValueError as exc:
        raise WorkflowDefinitionError(f"invalid cron {expression!r}: {exc}") from None


def time_zone(name: str | None) -> zoneinfo.ZoneInfo | None:
    """The IANA time zone `name` (None: the machine's own), or `WorkflowDefinitionError`."""
    try:
        return zoneinfo.ZoneInfo(name) if name else None
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise WorkflowDefinitionError(f"unknown time zone {name!r}") from None


def crontab_weekdays(spec: str) -> str:
    """`1-5` -> `mon,tue,wed,thu,fri`; `*/2` -> `sun,tue,thu,sat`; names pass through."""
    if spec in ("*", "?") or re.search(r"[A-Za-z]", spec):
        return "*" if spec == "?" else spec
    days: set[int] = set()
    for item in spec.split(","):
        base, _, step_text = item.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if base == "*":
                low, high = 0, 6
            elif "-" in base:
                low_text, high_text = base.split("-", 1)
                low, high = int(low_text), int(high_text)
            else:
                low = int(base)
                high = 6 if step_text else low
        except ValueError:
            raise WorkflowDefinitionError(f"invalid cron weekday {spec!r}") from None
        if not (0 <= low <= 7 and 0 <= high <= 7 and low <= high and step >= 1):
            raise WorkflowDefinitionError(f"invalid cron weekday {spec!r}")
        days.update(day % 7 for day in range(low, high + 1, step))
    return ",".join(_WEEKDAYS[day] for day in sorted(days))
