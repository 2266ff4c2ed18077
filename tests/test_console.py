"""What `weaver.console` renders: run states, times ago, result briefs, and when a bar appears."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from weaver.cli.console import IndexDisplay, ago, format_state, summarise_result, without_path


@pytest.mark.parametrize(
    ("status", "progress", "shown"),
    [
        ("pending", 0, "pending"),
        ("running", 40, "running, 40%, attempt 1"),
        ("completed", 100, "completed, attempt 1"),
        ("failed", 40, "failed at 40%, attempt 1"),
        ("failed", 100, "failed, attempt 1"),  # it said 100 %, then failed: not done
        ("failed", 0, "failed, attempt 1"),
        ("cancelled", 0, "cancelled, attempt 1"),
    ],
)
def test_a_percentage_only_where_it_means_something(status: str, progress: int, shown: str) -> None:
    assert format_state(status, progress, 1) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "just now"), (-5, "just now"), (3, "3 s ago"), (125, "2 min ago"), (7300, "2 h ago")],
)
def test_ago(seconds: int, shown: str) -> None:
    assert ago(1_000_000_000, 1_000_000_000 + seconds * 1000) == shown
    assert ago(0, 3 * 86_400_000) == "3 days ago"


def test_a_result_in_brief() -> None:
    result = {"words": 1234, "ok": True, "tags": ["a", "b"], "nested": {"x": 1}, "path": "a.md"}
    assert summarise_result(result) == "words 1,234, ok true, tags [2], nested {1}, path a.md"
    many = {f"k{i}": i for i in range(10)}
    assert summarise_result(many).endswith("k7 7, … 2 more")
    assert summarise_result("x" * 100).endswith("…")
    assert summarise_result({}) == "{}"


def test_without_path_drops_only_the_parser_s_own_suffix() -> None:
    assert without_path("bad YAML (a/b.md)", "a/b.md") == "bad YAML"
    assert without_path("cannot read file (other.md)", "a/b.md") == "cannot read file (other.md)"


def test_the_bar_waits_for_a_pass_that_lasts() -> None:
    now = [0.0]
    out = io.StringIO()
    screen = Console(file=out, force_terminal=True, width=100)
    with IndexDisplay(screen, delay=1.0, clock=lambda: now[0]) as display:
        display.notes_read(0, 1000)
        now[0] = 0.5
        display.notes_read(250, 1000)
        assert "Indexing" not in out.getvalue()  # half a second in: no bar yet
        display.note_failed("x.md", "broken (x.md)")
        now[0] = 1.5
        display.notes_read(500, 1000)
        display.notes_read(1000, 1000)
    drawn = out.getvalue()
    assert drawn.index("x.md: broken") < drawn.index("Indexing")
    assert "1,000/1,000 notes" in drawn


def test_a_pass_done_before_the_delay_draws_nothing() -> None:
    out = io.StringIO()
    with IndexDisplay(Console(file=out, force_terminal=True), delay=1.0) as display:
        display.notes_read(0, 10)
        display.notes_read(10, 10)
    assert out.getvalue() == ""
