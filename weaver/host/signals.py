"""Stop a long-running command cleanly on SIGINT or SIGTERM.

The first signal asks the command to stop (running executions are ended and recorded, the cache
is left consistent) and the process exits 0; a second Ctrl-C while it stops is the default
KeyboardInterrupt, for the impatient.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

import anyio
import structlog

log = structlog.get_logger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def run_until_signalled(main: Callable[[anyio.Event], Awaitable[None]]) -> None:
    """Run `main(stop)`; SIGINT or SIGTERM sets `stop`, after which `main` should return."""
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def set_stop_on_signal() -> None:
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async for signum in signals:
                    log.info("stopping", signal=signal.Signals(signum).name)
                    stop.set()
                    return

        tg.start_soon(set_stop_on_signal)
        await main(stop)
        tg.cancel_scope.cancel()
