"""One attempt of one execution: call the workflow, bounded by its timeout, and say how it went.

Each attempt runs in a thread of its own, whatever the workflow's kind: a synchronous function
is called there, a coroutine function gets its own event loop there (`asyncio.run`), so the
caller may be a pool worker, the CLI, or a thread that already runs an event loop (an MCP tool).
The caller waits for the thread up to the timeout. A coroutine is cancelled at its timeout;
a synchronous function cannot be stopped from outside, so its thread is abandoned (daemonic,
its result discarded) after `ctx.cancelled` is set for it to notice.
"""

from __future__ import annotations

import asyncio
import threading
import traceback
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from weaver.engine.context import WorkflowContext
from weaver.engine.definition import Workflow

# How often a waiting caller looks whether it was asked to stop, in seconds. Waiting ends the
# moment the attempt does; this only bounds how late a stop request is noticed.
STOP_CHECK_SECONDS = 0.05
# A coroutine gets this long past its timeout to unwind after being cancelled.
CANCEL_GRACE_SECONDS = 1.0
CANCELLED_ERROR = "cancelled by request"
ENGINE_STOPPED = "interrupted: the engine stopped"


@dataclass(frozen=True, slots=True)
class Completed:
    result: Any


@dataclass(frozen=True, slots=True)
class Failed:
    """`interrupted`: the attempt ended because its engine stopped, no failure of the workflow
    (the engine queues the run again rather than record it failed)."""

    error: str
    traceback: str | None = None
    timed_out: bool = False
    interrupted: bool = False


def interrupted(error: str = ENGINE_STOPPED) -> Failed:
    return Failed(error, interrupted=True)


Outcome = Completed | Failed


def run_attempt(workflow: Workflow, ctx: WorkflowContext[Any], stop: threading.Event) -> Outcome:
    """Run one attempt to its end, its timeout, or until `stop` is set."""
    timeout = workflow.policy.timeout
    box: list[Outcome] = []
    thread = threading.Thread(
        target=lambda: box.append(_call(workflow, ctx, timeout)),
        name=f"weaver-workflow-{ctx.execution_id}",
        daemon=True,
    )
    thread.start()
    limit = (
        None if timeout is None else timeout + (CANCEL_GRACE_SECONDS if workflow.is_async else 0)
    )
    # `cancelled` set while waiting is a cancel request (the engine's `cancel`), or the engine
    # stopping (which sets `stop` too); a timeout sets it only after the wait.
    ended = _wait(thread, limit, stop, ctx.cancelled)
    if ended and not ctx.cancelled.is_set():
        return box[0]
    # Asked to stop, a workflow watching `cancelled` returns early: that is no completion.
    was_cancelled = ctx.cancelled.is_set()
    ctx.cancelled.set()
    if stop.is_set():
        return interrupted()
    if was_cancelled:
        return Failed(CANCELLED_ERROR)
    return _timed_out(timeout)


def _wait(
    thread: threading.Thread, limit: float | None, stop: threading.Event, cancel: threading.Event
) -> bool:
    """True when the thread ended within `limit` seconds and before `stop` or `cancel` was
    set."""
    waited = 0.0
    while limit is None or waited < limit:
        step = STOP_CHECK_SECONDS if limit is None else min(STOP_CHECK_SECONDS, limit - waited)
        thread.join(step)
        if not thread.is_alive():
            return True
        if stop.is_set() or cancel.is_set():
            return False
        waited += step
    return not thread.is_alive()


def _call(workflow: Workflow, ctx: WorkflowContext[Any], timeout: float | None) -> Outcome:
    try:
        if workflow.is_async:
            value = asyncio.run(_bounded(workflow.fn(ctx), timeout))
        else:
            value = workflow.fn(ctx)
    except _AttemptTimeoutError:
        return _timed_out(timeout)
    except BaseException as exc:  # a plugin's SystemExit must not end a worker thread either
        return Failed(f"{type(exc).__name__}: {exc}", traceback.format_exc())
    return to_result(value)


class _AttemptTimeoutError(Exception):
    """Raised in place of asyncio's TimeoutError, which the workflow itself could raise."""


async def _bounded(awaitable: Any, timeout: float | None) -> Any:
    if not isinstance(awaitable, Awaitable):
        return awaitable
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():  # ours, not a TimeoutError the workflow raised itself
            raise _AttemptTimeoutError from None
        raise


def _timed_out(timeout: float | None) -> Failed:
    return Failed(f"TimeoutError: ran past its timeout of {timeout:g}s", timed_out=True)


def to_result(value: Any) -> Outcome:
    """What the workflow returned, as JSON for the `result` column (pydantic models included)."""
    try:
        return Completed(to_jsonable_python(value))
    except PydanticSerializationError as exc:
        return Failed(f"result is not JSON-serialisable: {exc}")
