"""Stop a long-running command cleanly on SIGINT or SIGTERM.

The first signal asks the command to stop (running executions are ended and recorded, the cache
is left consistent) and the process exits 0; a second Ctrl-C while it stops is the default
KeyboardInterrupt, for the impatient.

Whatever is running, the process is gone within `STOP_GRACE_S` of the first signal: a call
stuck in a thread (a search, a workflow ignoring its cancellation, a write waiting on a full
disk) cannot be cancelled, and waiting for it is how SIGTERM used to do nothing. A watchdog
started with the signal runs `on_overdue` (the engine records its runs as interrupted) for at
most `OVERDUE_WORK_S`, then ends the process with `os._exit(0)`.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Awaitable, Callable

import anyio
import structlog

log = structlog.get_logger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# From the first signal to the process's end, at the latest (the promise is 10 s).
STOP_GRACE_S = 7.0
# What `on_overdue` may take of the rest.
OVERDUE_WORK_S = 2.0


def arm_stop_watchdog(
    on_overdue: Callable[[], object] | None = None, grace: float = STOP_GRACE_S
) -> threading.Thread:
    """End the process `grace` seconds from now if it is still there (a daemon thread: a
    process that ends by itself ends it too)."""

    def overdue() -> None:
        log.error("stopping is overdue: ending the process now", grace_s=grace)
        if on_overdue is not None:
            worker = threading.Thread(target=on_overdue, name="weaver-overdue", daemon=True)
            worker.start()
            worker.join(OVERDUE_WORK_S)
        os._exit(0)

    timer = threading.Timer(grace, overdue)
    timer.name, timer.daemon = "weaver-stop-watchdog", True
    timer.start()
    return timer


async def run_until_signalled(
    main: Callable[[anyio.Event], Awaitable[None]],
    on_overdue: Callable[[], object] | None = None,
) -> None:
    """Run `main(stop)`; SIGINT or SIGTERM sets `stop`, after which `main` should return, and
    arms the watchdog (`arm_stop_watchdog`) that ends the process should it not."""
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def set_stop_on_signal() -> None:
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async for signum in signals:
                    log.info("stopping", signal=signal.Signals(signum).name)
                    arm_stop_watchdog(on_overdue)
                    stop.set()
                    return

        tg.start_soon(set_stop_on_signal)
        await main(stop)
        tg.cancel_scope.cancel()
