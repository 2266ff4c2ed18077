"""Periodic checks that wake the process together: each sleeps to the next multiple of its
period on the event loop's clock, so checks whose periods divide each other fall due at the
same instant and the loop wakes once for all of them, rather than once for each."""

from __future__ import annotations

import anyio


def next_tick(period: float) -> float:
    """The loop's clock at its next whole multiple of `period` seconds."""
    if period <= 0:
        raise ValueError(f"a tick period must be positive, not {period}")
    return (anyio.current_time() // period + 1) * period


async def sleep_to_tick(period: float) -> None:
    """Sleep until the loop's clock is next a whole multiple of `period` seconds."""
    await anyio.sleep_until(next_tick(period))
