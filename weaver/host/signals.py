"""Stop a long-running command cleanly on SIGINT or SIGTERM.

The first signal asks the command to stop (running executions are ended and recorded, the cache
is left consistent) and the process exits 0; a second Ctrl-C while it stops is the default
KeyboardInterrupt, for the impatient.

Whatever is running, the process is gone within `STOP_GRACE_S` of the first signal: a call
stuck in a thread (a search, a workflow ignoring its cancellation, a write waiting on a full
disk) cannot be cancelled, and waiting for it is how SIGTERM used to do nothing. A watchdog
started with the signal runs `on_overdue` (the engine records its runs as interrupted) for at
most `OVERDUE_WORK_S`, then ends the process with `os._exit(0)`.

Where the event loop cannot watch signals (Windows: no `add_signal_handler`, and no SIGTERM
from outside; Ctrl-C is SIGINT, Ctrl-Break and a console's close SIGBREAK), `next_stop_signal`
installs plain `signal.signal` handlers that wake the loop instead. `WEAVER_SIGNALS=handlers`
forces that path anywhere, so that tests run it on Linux.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import os
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from types import FrameType
from typing import Any, NoReturn

import anyio
import structlog

log = structlog.get_logger(__name__)

# SIGBREAK exists on Windows only: Ctrl-Break, and what a console sends when it closes.
STOP_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    *((signal.SIGBREAK,) if hasattr(signal, "SIGBREAK") else ()),
)
# `WEAVER_SIGNALS=handlers` takes the path Windows takes, on any platform.
SIGNALS_ENV = "WEAVER_SIGNALS"
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
        log.error(
            "stopping is overdue: ending the process now (what each thread was doing follows)",
            grace_s=grace,
        )
        # What held the stop up, for the bug report: otherwise nothing says.
        faulthandler.dump_traceback(all_threads=True)
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
            signum = await next_stop_signal()
            log.info("stopping", signal=signal.Signals(signum).name)
            arm_stop_watchdog(on_overdue)
            stop.set()

        tg.start_soon(set_stop_on_signal)
        await main(stop)
        tg.cancel_scope.cancel()


async def next_stop_signal() -> int:
    """Wait for the first of `STOP_SIGNALS`; its number."""
    if not handlers_only():
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            async for signum in signals:
                return signum
    return await _by_handlers()


def handlers_only() -> bool:
    """Whether the event loop cannot watch signals here (or that path is forced)."""
    return sys.platform == "win32" or os.environ.get(SIGNALS_ENV) == "handlers"


async def _by_handlers() -> int:
    """`next_stop_signal` with `signal.signal` handlers.

    A Python handler runs in the main thread between two bytecodes, which a loop asleep in
    select() does not reach when the signal lands on another thread. So the C-level handler's
    wake-up byte (the signal's number, written to `set_wakeup_fd`) is read by a thread, which
    hands it to the loop with `call_soon_threadsafe`; the Python handler does the same when it
    runs. The handlers that were there before come back at the first signal, so a second Ctrl-C
    is the usual KeyboardInterrupt.
    """
    loop = asyncio.get_running_loop()
    received: asyncio.Future[int] = loop.create_future()

    def deliver(signum: int) -> None:
        if signum in STOP_SIGNALS and not received.done():
            received.set_result(signum)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(deliver, signum)

    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    wake_reader, wake_writer = socket.socketpair()
    wake_writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(wake_writer.fileno(), warn_on_full_buffer=False)

    def read_wake_ups() -> None:
        with contextlib.suppress(OSError):
            while byte := wake_reader.recv(1):
                loop.call_soon_threadsafe(deliver, byte[0])

    reader = threading.Thread(target=read_wake_ups, name="weaver-signals", daemon=True)
    reader.start()
    try:
        return await received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_fd)
        wake_writer.close()  # the reader's recv() ends with end of file
        reader.join(1)
        wake_reader.close()


async def serve_stdio_until_stopped(
    serve: Callable[[], Awaitable[None]],
    stop: Callable[[], None],
    beside: Callable[[], Coroutine[Any, Any, None]] | None = None,
) -> None:
    """Run `serve` (a stdio session) until the client closes stdin, or SIGINT or SIGTERM ask
    to stop, which call `stop`; `beside` runs meanwhile.

    A signal cannot end this by unwinding: the SDK reads stdin in a worker thread, and a read
    returns only with a line or at end of file, so cancelling would wait for the client (a
    Ctrl-C in a terminal hung). `stop` cleans up as a normal end would and exits the process
    (`exit_now`)."""
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            signum = await next_stop_signal()
            log.info("stopping", signal=signal.Signals(signum).name)
            stop()

        tg.start_soon(stop_on_signal)
        if beside is not None:
            tg.start_soon(beside)
        await serve()
        tg.cancel_scope.cancel()


def exit_now(cleanup: contextlib.ExitStack) -> NoReturn:
    """Stop the engine (its runs under way recorded as interrupted) and close the cache, then
    leave without waiting for the thread blocked on stdin."""
    cleanup.close()
    log.info("serve stopped")
    sys.stderr.flush()
    os._exit(0)
