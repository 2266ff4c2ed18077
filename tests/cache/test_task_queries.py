"""Task queries run as SQL: what a query finds, in the plugin's order, with true totals and
group counts, on both backends. Task rows are inserted directly (with their notes indexed)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from sqlalchemy import delete, insert

from tests.helpers import WriteNotes
from weaver.cache.models import Task
from weaver.cache.task_queries import TaskPage, run_task_query
from weaver.runtime.app import App
from weaver.tasks.query_language import parse_task_query

pytestmark = pytest.mark.both_backends

TODAY = date(2026, 5, 13)
NOTES: dict[str, str | bytes] = {
    "Projects/Alpha.md": "# Alpha\n",
    "Projects/Sub/Beta.md": "# Beta\n",
    "Daily/2026-05-13.md": "# Today\n",
    "Inbox.md": "inbox\n",
}


def task(path: str, line: int, description: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "note_path": path,
        "line": line,
        "parent_line": None,
        "heading": None,
        "block_id": None,
        "status_char": " ",
        "status_type": "TODO",
        "description": description,
        "raw": f"- [ ] {description}",
        "tags": [],
        "due": None,
        "scheduled": None,
        "start": None,
        "created": None,
        "done": None,
        "cancelled": None,
        "recurrence": None,
        "priority": 3,
        "task_id": None,
        "depends_on": [],
        "fields": {},
        "warnings": [],
    }
    row.update(fields)
    return row


TASKS = [
    task("Projects/Alpha.md", 3, "write the plan", due="2026-05-10", priority=1, tags=["#work"]),
    task("Projects/Alpha.md", 4, "Call the bank", due="2026-05-13", heading="Alpha > Money"),
    task("Projects/Sub/Beta.md", 2, "review draft", due="2026-05-20", tags=["#work", "#review"]),
    task(
        "Projects/Sub/Beta.md",
        5,
        "ship it",
        status_char="x",
        status_type="DONE",
        done="2026-05-12",
        due="2026-05-11",
    ),
    task("Daily/2026-05-13.md", 1, "water plants", recurrence="every day", scheduled="2026-05-13"),
    task("Daily/2026-05-13.md", 2, "in progress thing", status_char="/", status_type="IN_PROGRESS"),
    task("Inbox.md", 1, "someday maybe", start="2026-06-01", priority=5, tags=["#someday"]),
    task(
        "Inbox.md", 2, "dropped", status_char="-", status_type="CANCELLED", cancelled="2026-05-01"
    ),
]


@pytest.fixture
def tasks_app(app: App, write_notes: WriteNotes) -> App:
    write_notes(NOTES)
    app.indexer.reconcile()
    with app.db.begin() as conn:
        conn.execute(delete(Task))
        conn.execute(insert(Task), TASKS)
    return app


def run(app: App, text: str, offset: int = 0, limit: int = 50) -> TaskPage:
    with app.db.connect() as conn:
        return run_task_query(conn, parse_task_query(text, TODAY), TODAY, offset, limit)


def found(app: App, text: str) -> list[str]:
    return [t.description for t in run(app, text).page.items]


def test_open_tasks_due_before_tomorrow_sorted_by_due(tasks_app: App) -> None:
    assert found(tasks_app, "not done\ndue before tomorrow\nsort by due") == [
        "write the plan",
        "Call the bank",
    ]


def test_an_empty_query_shows_every_task_in_the_plugins_default_order(tasks_app: App) -> None:
    # status.type first (in progress, todo, done, cancelled), then urgency within a type:
    # overdue and high (12 + 6) > due today (8.8 + 1.95) > due in a week (5.6 + 1.95) >
    # scheduled today (5 + 1.95) > starting later, lowest (-3 - 1.8).
    assert found(tasks_app, "") == [
        "in progress thing",
        "write the plan",
        "Call the bank",
        "review draft",
        "water plants",
        "someday maybe",
        "ship it",
        "dropped",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("done", {"ship it", "dropped"}),
        ("status.type is IN_PROGRESS", {"in progress thing"}),
        ("status.name includes progress", {"in progress thing"}),
        ("has due date\nnot done", {"write the plan", "Call the bank", "review draft"}),
        ("due in this week", {"Call the bank", "ship it"}),  # Monday 11 to Sunday 17
        ("happens on today", {"Call the bank", "water plants"}),
        ("no happens date\nnot done", {"in progress thing"}),
        ("is recurring", {"water plants"}),
        ("priority is above none", {"write the plan"}),
        ("priority is below none", {"someday maybe"}),
        ("folder includes projects/sub", {"review draft", "ship it"}),
        ("folder includes /\nfilename includes inbox", {"someday maybe", "dropped"}),
        (
            "path does not include Projects",
            {"water plants", "in progress thing", "someday maybe", "dropped"},
        ),
        ("heading includes money", {"Call the bank"}),
        ("description includes CALL", {"Call the bank"}),
        ("description regex matches /^call/", set()),
        ("description regex matches /^call/i", {"Call the bank"}),
        ("tags include #WORK", {"write the plan", "review draft"}),
        ("tag regex matches /view$/", {"review draft"}),
        ("has tags\ntags do not include #work", {"someday maybe"}),
        (
            "(due before today) OR (tags include #someday)",
            {"write the plan", "ship it", "someday maybe"},
        ),
        ("NOT (done) AND (no due date)", {"water plants", "in progress thing", "someday maybe"}),
        ("cancelled before 2026-05-02", {"dropped"}),
    ],
)
def test_filters_find_what_the_plugin_would(tasks_app: App, text: str, expected: set[str]) -> None:
    assert set(found(tasks_app, text)) == expected


def test_pages_carry_the_true_total_and_never_overlap(tasks_app: App) -> None:
    first = run(tasks_app, "not done", limit=2)
    second = run(tasks_app, "not done", offset=2, limit=2)
    assert first.page.total == second.page.total == 6
    assert first.page.has_more
    seen = [t.description for t in first.page.items + second.page.items]
    assert len(set(seen)) == 4


def test_the_querys_own_limit_caps_the_total(tasks_app: App) -> None:
    answer = run(tasks_app, "not done\nlimit 3")
    assert answer.page.total == 3
    assert len(answer.page.items) == 3


def test_groups_are_counted_over_the_whole_match_not_the_page(tasks_app: App) -> None:
    answer = run(tasks_app, "not done\ngroup by folder", limit=1)
    counts = {g.names: g.count for g in answer.groups}
    assert counts == {("/",): 1, ("Daily/",): 2, ("Projects/",): 2, ("Projects/Sub/",): 1}
    assert answer.page.items[0].group == ("/",)


def test_groups_by_file_name_join_same_named_notes_in_the_pages_order(
    tasks_app: App, write_notes: WriteNotes
) -> None:
    write_notes({"Archive/Inbox.md": "old inbox\n"})
    tasks_app.indexer.reconcile()
    with tasks_app.db.begin() as conn:
        conn.execute(insert(Task), [task("Archive/Inbox.md", 1, "file the receipts")])
    answer = run(tasks_app, "not done\ngroup by filename reverse")
    assert [(g.names[0], g.count) for g in answer.groups] == [
        ("Inbox.md", 2),  # one group for the two notes called Inbox.md, in different folders
        ("Beta.md", 1),
        ("Alpha.md", 2),
        ("2026-05-13.md", 2),
    ]
    shown = list(dict.fromkeys(t.group for t in answer.page.items))
    assert shown == [g.names for g in answer.groups]


def test_two_group_levels_order_as_the_page_does(tasks_app: App) -> None:
    answer = run(tasks_app, "not done\ngroup by folder reverse\ngroup by priority")
    assert [(g.names, g.count) for g in answer.groups] == [
        (("Projects/Sub/", "Priority 4: none"), 1),
        (("Projects/", "Priority 2: high"), 1),
        (("Projects/", "Priority 4: none"), 1),
        (("Daily/", "Priority 4: none"), 2),
        (("/", "Priority 6: lowest"), 1),
    ]
    shown = list(dict.fromkeys(t.group for t in answer.page.items))
    assert shown == [g.names for g in answer.groups]


def test_grouping_by_tags_shows_a_task_under_each_tag(tasks_app: App) -> None:
    answer = run(tasks_app, "has tags\ngroup by tags")
    counts = {g.names[0]: g.count for g in answer.groups}
    assert counts == {"#review": 1, "#someday": 1, "#work": 2}
    assert answer.page.total == 4


def test_limit_groups_keeps_the_first_tasks_of_each_group(tasks_app: App) -> None:
    answer = run(tasks_app, "group by status\nlimit groups 1")
    assert [(t.group, t.description) for t in answer.page.items] == [
        (("Done",), "ship it"),
        (("Todo",), "in progress thing"),
    ]


def test_a_task_says_its_dates_priority_and_place(tasks_app: App) -> None:
    (plan,) = run(tasks_app, "description includes the plan").page.items
    assert (plan.path, plan.line, plan.priority, plan.tags) == (
        "Projects/Alpha.md",
        3,
        "high",
        ["#work"],
    )
    assert plan.dates == {"due": "2026-05-10"}


def test_groups_count_only_the_tasks_the_querys_limit_keeps(tasks_app: App) -> None:
    # The plugin limits the sorted tasks first, then groups what is left.
    answer = run(tasks_app, "not done\nsort by due\ngroup by folder\nlimit 2")
    assert answer.page.total == 2
    assert {g.names: g.count for g in answer.groups} == {("Projects/",): 2}


def test_limit_groups_pages_follow_a_reversed_groups_order(tasks_app: App) -> None:
    answer = run(tasks_app, "group by status reverse\nlimit groups 1")
    assert [g.names for g in answer.groups] == [("Todo",), ("Done",)]
    assert [t.group for t in answer.page.items] == [("Todo",), ("Done",)]


@pytest.mark.parametrize(
    "text",
    [
        "group by filename",
        "group by folder reverse\ngroup by priority",
        "not done\ngroup by filename\nsort by due\nlimit 4",
        "group by folder\ngroup by filename reverse",
    ],
)
@pytest.mark.parametrize("size", [1, 2, 3])
def test_pages_of_a_query_grouped_by_place_walk_the_whole_order(
    tasks_app: App, text: str, size: int
) -> None:
    whole = run(tasks_app, text)
    pages, offset = [], 0
    while offset < whole.page.total:
        page = run(tasks_app, text, offset=offset, limit=size)
        assert page.page.total == whole.page.total
        pages += [(t.path, t.line, t.group) for t in page.page.items]
        offset += size
    assert pages == [(t.path, t.line, t.group) for t in whole.page.items]
