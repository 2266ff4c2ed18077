"""Schedules on PostgreSQL, fired by the workers (`weaver worker`): each tick of each schedule
deferred as one job however many workers run, at the time the daemon's scheduler fires it.

Every worker computes the ticks with the daemon's own trigger (`OnSchedule.build_trigger`: in
the schedule's time zone, the machine's when none is named, daylight saving included) and defers
the tick's job under the schedule's id and the tick's timestamp; the database keeps one row per
both, so the workers that come second defer nothing, and a tick at or before the latest recorded
one is never deferred again.

As on the daemon: a schedule that has never fired starts with its next tick; one whose last tick
was missed while no worker ran fires once on start if that tick is within
`schedule_misfire_grace_s`, several missed ticks folded into the last. How:
docs/architecture.md, "engine/worker_schedules.py".
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

import structlog
from apscheduler.triggers.cron import CronTrigger  # type: ignore[import-untyped]

from weaver.cache.job_tables import last_periodic_defer
from weaver.engine.jobs import queue_of

if TYPE_CHECKING:
    import procrastinate

    from weaver.engine.registry import Registry

log = structlog.get_logger(__name__)

# A loop never sleeps longer than this, so a clock that jumps is noticed within a minute.
LONGEST_SLEEP_S = 60.0
# After a database error, the ticks are tried again after this.
RETRY_S = 2.0


@dataclass(frozen=True, slots=True)
class WorkerSchedule:
    periodic_id: str  # "<workflow id>#<index of the schedule>"
    workflow_id: str
    queue: str
    trigger: CronTrigger


class HasRegistry(Protocol):
    @property
    def registry(self) -> Registry: ...


def worker_schedules(engine: HasRegistry) -> list[WorkerSchedule]:
    """The schedules of the enabled workflows this worker has (so only workers that can run a
    schedule fire it)."""
    return [
        WorkerSchedule(f"{workflow.id}#{index}", workflow.id, queue_of(workflow.id), trigger)
        for workflow in engine.registry
        if workflow.enabled
        for index, schedule in enumerate(workflow.schedules)
        for trigger in [schedule.build_trigger()]
    ]


def next_tick(trigger: CronTrigger, after: datetime) -> datetime | None:
    """The trigger's first fire time strictly after `after` (None: it never fires again)."""
    tick: datetime | None = trigger.get_next_fire_time(after, after)
    return tick


def ticks_between(trigger: CronTrigger, after: datetime, until: datetime) -> list[datetime]:
    """The trigger's fire times in (`after`, `until`], in order."""
    ticks: list[datetime] = []
    tick = next_tick(trigger, after)
    while tick is not None and tick <= until:
        ticks.append(tick)
        tick = next_tick(trigger, tick)
    return ticks


# How far back `last_tick` looks at a time; None: as far as it is asked to.
_WINDOWS = (timedelta(minutes=1), timedelta(hours=1), timedelta(days=1), timedelta(days=31), None)


def last_tick(trigger: CronTrigger, after: datetime, until: datetime) -> datetime | None:
    """The trigger's last fire time in (`after`, `until`]. Looked for in windows growing back
    from `until`, so a schedule firing every second and missed for a week walks a minute's
    ticks, not a week's."""
    for span in _WINDOWS:
        start = after if span is None else max(after, until - span)
        ticks = ticks_between(trigger, start, until)
        if ticks:
            return ticks[-1]
        if start == after:
            return None
    return None


def tick_due_at_start(
    trigger: CronTrigger, last_fired: datetime | None, now: datetime, grace: timedelta
) -> datetime | None:
    """What a worker fires when it starts: nothing for a schedule that never fired; else the
    last tick missed since, if within `grace`."""
    if last_fired is None:
        return None
    return last_tick(trigger, max(last_fired, now - grace), now)


async def fire_schedules(
    app: procrastinate.App,
    schedules: Sequence[WorkerSchedule],
    task_name: str,
    grace: timedelta,
) -> None:
    """Defer each schedule's ticks as they come, until cancelled. A database error is logged
    and the same ticks tried again a moment later: a tick is late, never lost."""
    if not schedules:
        return
    since: dict[str, datetime] | None = None
    while True:
        try:
            if since is None:
                since = await _fire_missed(app, schedules, task_name, grace)
            await _sleep_until_next(schedules, since)
            await _fire_due(app, schedules, task_name, since)
        except Exception:
            log.exception("firing schedules failed; trying again", retry_in_s=RETRY_S)
            await asyncio.sleep(RETRY_S)


async def _fire_missed(
    app: procrastinate.App, schedules: Sequence[WorkerSchedule], task_name: str, grace: timedelta
) -> dict[str, datetime]:
    """On start: each schedule's tick missed while no worker ran; when each was looked at."""
    now = datetime.now(UTC)
    for schedule in schedules:
        last = await last_periodic_defer(app, task_name, schedule.periodic_id)
        missed = tick_due_at_start(schedule.trigger, last, now, grace)
        if missed is not None:
            await _defer(app, task_name, schedule, missed)
    return {schedule.periodic_id: now for schedule in schedules}


async def _sleep_until_next(
    schedules: Sequence[WorkerSchedule], since: dict[str, datetime]
) -> None:
    upcoming = [next_tick(s.trigger, since[s.periodic_id]) for s in schedules]
    soonest = min((tick for tick in upcoming if tick is not None), default=None)
    wait = LONGEST_SLEEP_S
    if soonest is not None:
        wait = min(max((soonest - datetime.now(UTC)).total_seconds(), 0.0), LONGEST_SLEEP_S)
    await asyncio.sleep(wait)


async def _fire_due(
    app: procrastinate.App,
    schedules: Sequence[WorkerSchedule],
    task_name: str,
    since: dict[str, datetime],
) -> None:
    """Each schedule's tick since it was last looked at (`since`, moved on once deferred)."""
    now = datetime.now(UTC)
    for schedule in schedules:
        due = last_tick(schedule.trigger, since[schedule.periodic_id], now)
        if due is not None:  # ticks missed by a late wake-up fold into the last
            await _defer(app, task_name, schedule, due)
        since[schedule.periodic_id] = now


async def _defer(
    app: procrastinate.App, task_name: str, schedule: WorkerSchedule, tick: datetime
) -> None:
    timestamp = int(tick.timestamp())
    last = await last_periodic_defer(app, task_name, schedule.periodic_id)
    if last is not None and int(last.timestamp()) >= timestamp:
        return  # another worker has fired this tick, or a later one
    deferrer = app.tasks[task_name].configure(
        queue=schedule.queue,
        task_kwargs={"timestamp": timestamp, "workflow_id": schedule.workflow_id},
    )
    job_id = await deferrer.job_manager.defer_periodic_job(
        job=deferrer.job, periodic_id=schedule.periodic_id, defer_timestamp=timestamp
    )
    if job_id is not None:
        log.info("schedule fired", workflow_id=schedule.workflow_id, tick=tick.isoformat())
