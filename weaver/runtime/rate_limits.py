"""Rate limits per client for expensive calls: a token bucket per (client, class of call).

A tool declares its class in its spec (`ToolSpec.rate_class`: "search", "graph" or "bulk");
the catalog asks `RateLimiter.take` before it runs the call and answers a refusal as an error
envelope with `retryAfterSeconds`. A bucket holds a minute's worth of calls (the setting
`rate_limit_<class>`) and refills at that rate, so a client may spend a burst at once and then
one call per share of the minute. Local callers (stdio, in memory: the person at the machine)
are not limited unless `rate_limit_local` says so.

In memory, per server process: limits are a guard against one client starving the others, not
an accounting, so a restart (or each of `http_processes`) starting afresh is acceptable.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from weaver.config import Settings

RateClass = Literal["search", "graph", "bulk"]
RATE_CLASSES: tuple[RateClass, ...] = get_args(RateClass)
# What each class covers, for the refusal's text.
CLASS_NAMES: dict[RateClass, str] = {
    "search": "semantic and hybrid search",
    "graph": "link-graph",
    "bulk": "bulk-edit",
}
# Buckets idle this long are full again whatever they held: dropped, so that many clients
# over a long uptime do not grow the table without bound.
IDLE_S = 120.0


@dataclass(frozen=True, slots=True)
class RateLimited:
    """A refused call: which limit, and in how many seconds a call of its class succeeds."""

    rate_class: RateClass
    per_minute: int
    retry_after_s: float

    @property
    def message(self) -> str:
        wait = math.ceil(self.retry_after_s)
        return (
            f"Rate limited: this client may make {self.per_minute} "
            f"{CLASS_NAMES[self.rate_class]} calls per minute (rate_limit_{self.rate_class}); "
            f"retry in {wait} s"
        )


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """The buckets of one server process. `clock` is monotonic seconds (injected in tests)."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self._per_minute: dict[RateClass, int] = {
            "search": settings.rate_limit_search,
            "graph": settings.rate_limit_graph,
            "bulk": settings.rate_limit_bulk,
        }
        self._limit_local = settings.rate_limit_local
        self._clock = clock
        self._buckets: dict[tuple[str, RateClass], _Bucket] = {}
        self._lock = threading.Lock()  # calls are taken on the event loop and in threads

    def take(self, client_id: str, local: bool, rate_class: RateClass) -> RateLimited | None:
        """Spend one call of `rate_class` for the client; a `RateLimited` when it has none."""
        per_minute = self._per_minute[rate_class]
        if per_minute == 0 or (local and not self._limit_local):
            return None
        rate = per_minute / 60.0  # calls per second
        now = self._clock()
        with self._lock:
            self._forget_idle(now)
            # Taken out and put back last: the dict stays in order of last use, idle ones first.
            key = (client_id, rate_class)
            bucket = self._buckets.pop(key, None) or _Bucket(float(per_minute), now)
            self._buckets[key] = bucket
            bucket.tokens = min(per_minute, bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return RateLimited(rate_class, per_minute, (1.0 - bucket.tokens) / rate)

    def __len__(self) -> int:
        """The buckets held: the clients seen within `IDLE_S`, per class."""
        return len(self._buckets)

    def _forget_idle(self, now: float) -> None:
        """Drop the buckets idle for `IDLE_S` (full again whatever they held): the oldest used
        lead the dict, so this reads only those it drops and the first one it keeps."""
        while self._buckets:
            key, oldest = next(iter(self._buckets.items()))
            if now - oldest.updated <= IDLE_S:
                return
            del self._buckets[key]
