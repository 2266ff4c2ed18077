"""A reader following the writer's change feed looks often while changes come and backs off
while none do (`runtime.follow`): an idle reader must not wake ten times a second."""

from __future__ import annotations

import anyio
import pytest

from weaver.runtime import follow
from weaver.runtime.app import App

WINDOW_S = 1.6


def polls_in_window(app: App, monkeypatch: pytest.MonkeyPatch, published: int) -> int:
    """How often the follower looks in `WINDOW_S` when each look finds `published` events."""
    calls: list[int] = []

    def poll(_self: follow.FeedFollower) -> int:
        calls.append(published)
        return published

    monkeypatch.setattr(follow.FeedFollower, "poll", poll)

    async def watch() -> None:
        with anyio.move_on_after(WINDOW_S):
            await follow.follow_feed(app)

    anyio.run(watch)
    return len(calls)


def test_an_idle_follower_backs_off(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    # 0.1 + 0.2 + 0.4 + 0.8 s: four or five looks, not the sixteen of a fixed 0.1 s.
    assert polls_in_window(app, monkeypatch, published=0) <= 6


def test_a_follower_hearing_changes_looks_often(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    assert polls_in_window(app, monkeypatch, published=1) >= 10
