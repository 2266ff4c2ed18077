"""Schedules fired by the workers (weaver.engine.worker_schedules): ticks in the schedule's time
zone as the daemon computes them, the tick missed while no worker ran, and each tick deferred
once however many workers fire it, on a real PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from tests.engine.test_jobs import engine_of
from weaver.engine import OnSchedule, WorkflowContext, WorkflowEngine, workflow
from weaver.engine.jobs import SCHEDULE_TASK, build_worker_app, conninfo_of
from weaver.engine.worker_schedules import (
    fire_schedules,
    last_tick,
    next_tick,
    tick_due_at_start,
    worker_schedules,
)
from weaver.runtime.app import App

WEEK = timedelta(days=7)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def trigger(cron: str, zone: str | None = None) -> Any:
    return OnSchedule(cron, zone).build_trigger()


def test_a_schedule_fires_at_its_own_time_zones_hour() -> None:
    """A digest at 8:00 in Tokyo is due at 23:00 UTC the day before (Procrastinate's
    periodic tasks, which read cron in UTC, fired it at 8:00 UTC)."""
    tick = next_tick(trigger("0 8 * * *", "Asia/Tokyo"), at("2026-11-26T00:00:00+00:00"))
    assert tick == at("2026-11-26T23:00:00+00:00")


def test_daylight_saving_moves_the_utc_time_not_the_local_one() -> None:
    paris = trigger("0 8 * * *", "Europe/Paris")
    saturday = next_tick(paris, at("2026-03-28T00:00:00+00:00"))
    assert saturday is not None
    sunday = next_tick(paris, saturday)  # summer time from 2026-03-29
    assert (saturday, sunday) == (at("2026-03-28T07:00:00Z"), at("2026-03-29T06:00:00Z"))


def test_weekdays_mean_what_crontab_and_the_daemon_mean() -> None:
    monday = next_tick(trigger("0 9 * * 1", "UTC"), at("2026-11-26T12:00:00Z"))  # a Thursday
    assert monday == at("2026-11-30T09:00:00Z")


def test_on_start_only_a_schedule_that_fired_before_catches_up() -> None:
    daily = trigger("0 8 * * *", "UTC")
    now = at("2026-11-26T09:30:00Z")
    assert tick_due_at_start(daily, None, now, WEEK) is None  # first start: the next tick
    assert tick_due_at_start(daily, at("2026-11-25T08:00:00Z"), now, WEEK) == at(
        "2026-11-26T08:00:00Z"
    )
    assert tick_due_at_start(daily, at("2026-11-26T08:00:00Z"), now, WEEK) is None
    # Missed for ten days, with a week's grace: the last tick, folded.
    assert tick_due_at_start(daily, at("2026-11-16T08:00:00Z"), now, WEEK) == at(
        "2026-11-26T08:00:00Z"
    )
    assert tick_due_at_start(daily, at("2026-11-16T08:00:00Z"), now, timedelta(minutes=30)) is None


def test_the_last_of_a_weeks_ticks_every_second_is_found_quickly() -> None:
    every_second = trigger("* * * * * *", "UTC")
    now = at("2026-11-26T09:30:00.500000Z")
    assert last_tick(every_second, now - WEEK, now) == at("2026-11-26T09:30:00Z")
    assert last_tick(every_second, now, now + timedelta(seconds=0.2)) is None


# ---------------------------------------------------------------- on a real PostgreSQL


@workflow(id="tick", name="Tick", triggers=[OnSchedule("* * * * * *")])
def tick(_ctx: WorkflowContext[Any]) -> None:
    return None


def deferred_ticks(url: str) -> list[tuple[int, int]]:
    with psycopg.connect(conninfo_of(url)) as conn:
        rows = conn.execute(
            "SELECT (args->>'timestamp')::bigint, count(*) FROM procrastinate_jobs "
            "WHERE task_name = %s GROUP BY 1 ORDER BY 1",
            (SCHEDULE_TASK,),
        ).fetchall()
    return [(int(stamp), int(count)) for stamp, count in rows]


def test_three_workers_defer_each_tick_once(pg_app: App) -> None:
    engine = engine_of(pg_app, tick)
    try:
        asyncio.run(_fire_for(engine, workers=3, seconds=3.5))
    finally:
        engine.stop()
    ticks = deferred_ticks(pg_app.settings.db_url)
    assert len(ticks) >= 2, ticks
    # Each tick once. (Not every second: a worker late by a whole second folds the missed
    # tick into the next, as the daemon's scheduler coalesces, so a gap under load is no fault.)
    assert all(count == 1 for _stamp, count in ticks), ticks


async def _fire_for(engine: WorkflowEngine, workers: int, seconds: float) -> None:
    apps = [build_worker_app(engine) for _ in range(workers)]
    schedules = worker_schedules(engine)
    opened = [app.open_async() for app in apps]
    for context in opened:
        await context.__aenter__()
    try:
        loops = [
            asyncio.create_task(fire_schedules(app, schedules, SCHEDULE_TASK, WEEK)) for app in apps
        ]
        await asyncio.sleep(seconds)  # the span whose ticks the test counts
        for loop in loops:
            loop.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
    finally:
        for context in opened:
            await context.__aexit__(None, None, None)
