"""The runs under way in this process: their cancel switches, who waits for them to end, and
who hears a sync run's progress."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Hears a sync run's progress reports: (percent 0..100, message).
ProgressListener = Callable[[int, str | None], None]

# Whoever waits on a run (its end, its row) looks again at least this often, in seconds.
SYNC_POLL_SECONDS = 0.1
# How long `cancel` waits for a run claimed by this process to register its cancel switch.
REGISTER_WAIT_SECONDS = 2.0


class LiveRuns:
    """Shared by the engine's threads: `stopping` is the engine's stop, every other method is
    about one execution id."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._switches: dict[str, threading.Event] = {}  # execution id -> its attempt's `cancelled`
        self._cancel_requested: set[str] = set()
        self._listeners: dict[str, ProgressListener] = {}

    def begin_attempt(self, execution_id: str) -> threading.Event:
        """A fresh cancel switch for the run's next attempt, registered as its current one."""
        switch = threading.Event()
        with self._lock:
            self._switches[execution_id] = switch
        return switch

    def end(self, execution_id: str) -> None:
        with self._lock:
            self._switches.pop(execution_id, None)
        self.notify()

    def is_running(self, execution_id: str) -> bool:
        with self._lock:
            return execution_id in self._switches

    def switch_of(self, execution_id: str, claimed_here: bool) -> threading.Event | None:
        """The cancel switch of a run this process runs. A run claimed here a moment ago is
        `running` in the cache before its thread has registered it: that moment is waited
        out, so that a cancel right after a trigger is not refused as another process's."""
        deadline = time.monotonic() + REGISTER_WAIT_SECONDS
        while True:
            with self._lock:
                switch = self._switches.get(execution_id)
            if switch is not None or not claimed_here or time.monotonic() >= deadline:
                return switch
            time.sleep(0.005)

    def request_cancel(self, execution_id: str, switch: threading.Event) -> None:
        with self._lock:
            self._cancel_requested.add(execution_id)
            switch.set()

    def cancel_requested(self, execution_id: str) -> bool:
        with self._lock:
            return execution_id in self._cancel_requested

    def take_cancel_request(self, execution_id: str) -> bool:
        """Whether a cancel was asked for the run, forgetting it (the run is ending)."""
        with self._lock:
            asked = execution_id in self._cancel_requested
            self._cancel_requested.discard(execution_id)
        return asked

    def stop(self) -> None:
        """Stop the engine: every attempt under way sees its `cancelled` set."""
        self.stopping.set()
        with self._lock:
            for switch in self._switches.values():
                switch.set()

    def notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def wait(self, seconds: float = SYNC_POLL_SECONDS) -> None:
        """Until a run ends or an end is recorded here, or `seconds` pass."""
        with self._changed:
            self._changed.wait(seconds)

    def wait_until_done(self, execution_id: str, seconds: float = 5.0) -> None:
        deadline = time.monotonic() + seconds
        with self._changed:
            while self.is_running(execution_id) and time.monotonic() < deadline:
                self._changed.wait(SYNC_POLL_SECONDS)

    @contextmanager
    def listening(self, execution_id: str, listener: ProgressListener | None) -> Iterator[None]:
        if listener is None:
            yield
            return
        self._listeners[execution_id] = listener
        try:
            yield
        finally:
            self._listeners.pop(execution_id, None)

    def listener_of(self, execution_id: str) -> ProgressListener | None:
        return self._listeners.get(execution_id)
