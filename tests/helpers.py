"""What several test modules share: waiting for something that happens in another thread or
process."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    check: Callable[[], T], timeout: float = 5.0, what: str = "the condition", every: float = 0.01
) -> T:
    """Call `check` until it returns something truthy, and return that; fail the test naming
    `what` when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        if result := check():
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)
