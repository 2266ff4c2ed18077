"""The rate limiter's buckets: a client's spent calls are kept while it is active, and the
buckets of clients gone quiet are dropped, however few or many there are."""

from __future__ import annotations

from pathlib import Path

from weaver.config import Settings
from weaver.runtime.rate_limits import IDLE_S, RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def limiter(tmp_path: Path, clock: Clock) -> RateLimiter:
    return RateLimiter(Settings(vault=tmp_path, rate_limit_search=2), clock=clock)


def test_quiet_clients_are_forgotten_and_an_active_one_keeps_its_spent_calls(
    tmp_path: Path,
) -> None:
    clock = Clock()
    limits = limiter(tmp_path, clock)
    for n in range(50):  # a few clients, well under any batch size
        assert limits.take(f"passer-{n}", local=False, rate_class="search") is None
    clock.now += IDLE_S + 1
    assert limits.take("steady", local=False, rate_class="search") is None
    assert len(limits) == 1  # the passers, quiet for IDLE_S, are gone
    assert limits.take("steady", local=False, rate_class="search") is None
    refused = limits.take("steady", local=False, rate_class="search")
    assert refused is not None and 29 < refused.retry_after_s <= 30


def test_a_client_seen_again_is_not_forgotten_with_the_quiet_ones(tmp_path: Path) -> None:
    clock = Clock()
    limits = limiter(tmp_path, clock)
    for n in range(1_000):
        limits.take(f"client-{n}", local=False, rate_class="search")
        clock.now += IDLE_S / 1_000  # spread over one idle period
    limits.take("client-0", local=False, rate_class="search")  # the first one, back
    clock.now += IDLE_S / 2
    limits.take("late", local=False, rate_class="search")
    # Gone: the first half, but client-0, which was seen since, and late are kept.
    assert 490 < len(limits) < 510
    clock.now += IDLE_S / 2 + 1
    limits.take("later", local=False, rate_class="search")
    assert len(limits) == 2  # late and later: client-0 too has been quiet for IDLE_S since
