"""What `weaver.console` renders: run states, times ago, result briefs, and when a bar appears."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from weaver.cli.console import (
    IndexDisplay,
    ago,
    format_passage,
    format_state,
    format_status,
    summarise_result,
    without_path,
)
from weaver.engine.payloads import TriggerInfo, WorkflowStatusData


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


def a_run(trigger: TriggerInfo) -> WorkflowStatusData:
    return WorkflowStatusData(
        execution_id="ex1",
        workflow_id="file-change-logger",
        workflow_name="File change logger",
        status="completed",
        progress=100,
        message=None,
        attempt=1,
        start_time=None,
        end_time=None,
        duration=12,
        result=None,
        error=None,
        traceback=None,
        trigger=trigger,
        input={},
        created_time=0,
        process=None,
    )


def test_status_counts_a_first_index_s_events_instead_of_listing_them() -> None:
    events = [{"kind": "add", "path": f"notes/n{i:04}.md", "initial": True} for i in range(6000)]
    events += [{"kind": "delete", "path": "old.md"}]
    text = format_status(a_run(TriggerInfo(kind="file", detail={"events": events})))
    assert len(text) < 1_000
    trigger = next(line for line in text.splitlines() if line.startswith("trigger:"))
    assert trigger == (
        "trigger:   file, 6,001 events (6,000 add, 1 delete): notes/n0000.md, notes/n0001.md, "
        "notes/n0002.md, notes/n0003.md, notes/n0004.md, … 5,996 more"
    )
    assert "every event: weaver status ex1 --json" in text


def test_status_shows_a_few_events_whole() -> None:
    one = [{"kind": "move", "path": "b.md", "oldPath": "a.md"}]
    text = format_status(a_run(TriggerInfo(kind="file", detail={"events": one})))
    assert "trigger:   file, 1 event (1 move): b.md\n" in text and "--json" not in text
    manual = format_status(a_run(TriggerInfo(kind="manual", detail={"via": "cli"})))
    assert 'trigger:   manual {"via": "cli"}' in manual


@pytest.mark.parametrize(
    ("snippet", "shown"),
    [
        ("first line\nsecond <mark>line</mark>\n\n  third", "first line second line third"),
        (
            "[![Build](https://img.shields.io/b.svg)](https://ci.example.org/x) Sync your phone",
            "Sync your phone",
        ),
        (
            "see [the docs](https://help.obsidian.md/sync) or https://obsidian.md now",
            "see the docs or now",
        ),
        ("an image ![shot](img/shot.png) here", "an image here"),
        (
            "keep [[Wiki|links]], [notes](Note.md) and (asides)",
            "keep [[Wiki|links]], [notes](Note.md) and (asides)",
        ),
    ],
)
def test_a_search_passage_is_one_line_without_boilerplate(snippet: str, shown: str) -> None:
    assert format_passage(snippet, width=200) == shown
    assert "\n" not in format_passage("a\n" * 100) and len(format_passage("word " * 50)) == 60
