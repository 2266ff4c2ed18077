"""Several server processes on one HTTP port: the writer (this process) and reader children.

With `http_processes = N`, the process that serves HTTP (the daemon, or `weaver serve
--transport http`) starts N-1 children that serve the same MCP app (and the daemon's dashboard)
over the same cache, as readers (`ServerState.may_write` false: they never take the writer
lock). They share this process's one listening socket, inherited at exec: whichever process is
free takes the next connection, and a dead child loses only its own connections.

A child runs `weaver.host.http_child`, told what to serve by one line of JSON on its stdin (the
settings, the token included, never in its environment or command line). When this process ends,
however it ends (kill -9 too), the child reads end of file on its stdin and stops. A child that
exits on its own is started again, after a pause that grows while it keeps failing. SIGTERM
reaches every child at once (`terminate`), and each stops within the 10 s promised
(`host.signals`). Why: docs/architecture.md, "host/http_readers.py".
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import anyio.to_thread
import structlog

from weaver.config import Settings

log = structlog.get_logger(__name__)

# How often the children are looked at, and the pauses before a crashed one is started again.
SUPERVISE_S = 0.5
RESTART_FIRST_S = 0.5
RESTART_MAX_S = 30.0
# A child that ran this long before exiting was healthy: its next restart pauses briefly again.
HEALTHY_RUN_S = 60.0
# How long the children get to stop after SIGTERM before they are killed: within the 7 s the
# writer itself has (`host.signals`), as they were told to stop when it was.
STOP_WAIT_S = 4.0
LISTEN_BACKLOG = 2048
CHILD_MODULE = "weaver.host.http_child"


@dataclass
class Child:
    """One reader process and when it may be started again should it exit."""

    number: int
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    pause: float = RESTART_FIRST_S
    restart_at: float = 0.0


@dataclass
class HttpChildren:
    """The reader processes sharing `sock` with this one."""

    settings: Settings
    sock: socket.socket
    count: int
    files: bool = True  # False: the children are `--no-vault` readers as this process is
    dashboard: bool = False  # the daemon's: its dashboard at `/` in every process
    queue: bool = False  # readers queueing workflow runs (`runtime.app.reader_queues`)
    children: list[Child] = field(default_factory=list)
    stopping: bool = False
    # Held while a child starts or all are told to stop: none starts once they were told
    # (its socket is closed by the server's shutdown right after).
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.children = [Child(number) for number in range(1, self.count + 1)]

    def listen(self) -> None:
        """One accept queue for every process (see the module's docstring)."""
        self.sock.listen(LISTEN_BACKLOG)

    def start(self) -> None:
        for child in self.children:
            self._spawn(child)

    def _spawn(self, child: Child) -> None:
        with self._lock:
            if not self.stopping:
                self._start(child)

    def _start(self, child: Child) -> None:
        command = [sys.executable, "-m", CHILD_MODULE, str(self.sock.fileno())]
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=sys.stderr.fileno(),  # stdout is nobody's here; logs go to stderr
            pass_fds=(self.sock.fileno(),),
        )
        child.process, child.started_at = process, time.monotonic()
        assert process.stdin is not None
        try:
            process.stdin.write(self._order())
            process.stdin.flush()  # kept open: its end of file tells the child this one ended
        except BrokenPipeError:  # it died at once: `restart_exited` sees it exited
            return
        log.info("HTTP reader process started", number=child.number, pid=process.pid)

    def _order(self) -> bytes:
        order = {
            "settings": json.loads(self.settings.model_dump_json()),
            "files": self.files,
            "queue": self.queue,
            "dashboard": self.dashboard,
        }
        return json.dumps(order).encode() + b"\n"

    def restart_exited(self) -> None:
        """Start again each child that exited on its own, after its pause."""
        now = time.monotonic()
        for child in self.children:
            process = child.process
            if self.stopping or process is None or process.poll() is None:
                continue
            if child.restart_at == 0.0:
                if process.stdin is not None:
                    process.stdin.close()
                if now - child.started_at > HEALTHY_RUN_S:
                    child.pause = RESTART_FIRST_S
                child.restart_at = now + child.pause
                log.error(
                    "HTTP reader process exited; starting it again",
                    number=child.number,
                    pid=process.pid,
                    code=process.returncode,
                    after_s=child.pause,
                )
                child.pause = min(child.pause * 2, RESTART_MAX_S)
            elif now >= child.restart_at:
                child.restart_at = 0.0
                self._spawn(child)

    def terminate(self) -> None:
        """Ask every child to stop (SIGTERM), without waiting; none starts after this."""
        with self._lock:
            self.stopping = True
        for child in self.children:
            if child.process is not None and child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = STOP_WAIT_S) -> None:
        """Wait for the children to stop; kill those still there after `timeout`."""
        self.terminate()
        deadline = time.monotonic() + timeout
        for child in self.children:
            process = child.process
            if process is None:
                continue
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error("HTTP reader process did not stop: killed", pid=process.pid)
                process.kill()
                process.wait()
            if process.stdin is not None and not process.stdin.closed:
                process.stdin.close()


async def supervise(children: HttpChildren, ready: Callable[[], bool]) -> None:
    """Start the children once `ready()` (the writer's first index is done, so that no reader
    answers from a cache still being filled), then restart any that exits, until cancelled."""
    while not ready():
        await anyio.sleep(SUPERVISE_S / 5)
    try:
        await anyio.to_thread.run_sync(children.start)
        while True:
            await anyio.sleep(SUPERVISE_S)
            children.restart_exited()
    except (OSError, ValueError) as exc:  # cannot start a process here: serve alone
        log.error("cannot start HTTP reader processes; serving from this one", error=str(exc))


def inherited_socket(fd: int) -> socket.socket:
    """The listening socket passed by the parent at `fd`."""
    sock = socket.socket(fileno=fd)
    os.set_inheritable(fd, False)
    return sock
