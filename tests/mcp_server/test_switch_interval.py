"""The short GIL switch interval of a serving process holds only while calls are answered:
idle, the process keeps Python's default (`runtime.gil`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from weaver.mcp_server.envelope import answer
from weaver.runtime.app import App
from weaver.runtime.gil import SWITCH_INTERVAL_S, QuickSwitch
from weaver.runtime.state import ServerState


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def default_interval() -> Iterator[float]:
    """Python's default interval for the test, whatever ran before; put back after."""
    kept = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield 0.005
    sys.setswitchinterval(kept)


def test_the_short_interval_holds_from_the_first_call_to_the_last(default_interval: float) -> None:
    switch = QuickSwitch()
    with switch.serving():
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
        with switch.serving():  # a second call, concurrent
            assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)  # one still runs
    assert sys.getswitchinterval() == pytest.approx(default_interval)


def test_an_error_in_a_call_still_puts_the_default_back(default_interval: float) -> None:
    switch = QuickSwitch()
    with pytest.raises(RuntimeError), switch.serving():
        raise RuntimeError("the call failed")
    assert sys.getswitchinterval() == pytest.approx(default_interval)


@pytest.mark.anyio
async def test_a_served_call_runs_with_the_short_interval_and_idle_has_the_default(
    app: App, default_interval: float
) -> None:
    state = ServerState(app, watch=False, quick_switch=QuickSwitch())
    seen: list[float] = []
    inside = threading.Event()
    release = threading.Event()

    def work() -> dict[str, Any]:
        seen.append(sys.getswitchinterval())
        inside.set()
        release.wait(10)
        return {}

    assert sys.getswitchinterval() == pytest.approx(default_interval)  # idle
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: answer(state, work, wait_ready=False))
        await anyio.to_thread.run_sync(inside.wait, 10)
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
        release.set()
    assert seen == [pytest.approx(SWITCH_INTERVAL_S)]
    assert sys.getswitchinterval() == pytest.approx(default_interval)  # idle again
