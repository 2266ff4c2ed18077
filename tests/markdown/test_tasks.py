"""weaver.markdown.tasks: task lines read as the Obsidian Tasks plugin reads them (its docs:
Getting Started/Dates, Priority, Recurring Tasks, Task Dependencies, Dataview Format)."""

from __future__ import annotations

from typing import Any

import pytest

from weaver.markdown.parser import parse_note
from weaver.markdown.tasks import PRIORITY_NAMES, TaskDates, parse_task_line


def picked(line: str, *keys: str) -> tuple[Any, ...]:
    task = parse_task_line(line, 1)
    assert task is not None
    return tuple(getattr(task, key) for key in keys)


@pytest.mark.parametrize(
    ("line", "status", "description"),
    [
        ("- [ ] Buy milk", " ", "Buy milk"),
        ("* [x] Done thing", "x", "Done thing"),
        ("+ [/] Half done", "/", "Half done"),
        ("1. [-] Dropped", "-", "Dropped"),
        ("12) [ ] Numbered with a paren", " ", "Numbered with a paren"),
        ("    - [ ] Indented", " ", "Indented"),
        ("> - [ ] In a quote", " ", "In a quote"),
        ("> > \t- [?] Deeper quote", "?", "Deeper quote"),
        ("- [ ]", " ", ""),
        ("- [ ] ", " ", ""),
    ],
)
def test_checkbox_list_items_are_tasks(line: str, status: str, description: str) -> None:
    assert picked(line, "status_char", "description") == (status, description)


@pytest.mark.parametrize(
    "line",
    [
        "Buy milk",
        "- Plain item",
        "- [] no char",
        "- [ab] two chars",
        "- [ ]no space after the box",
        "-[ ] no space after the dash",
        "[ ] no list marker",
        "1234567890. [ ] too many digits",
        "",
    ],
)
def test_other_lines_are_no_tasks(line: str) -> None:
    assert parse_task_line(line, 1) is None


@pytest.mark.parametrize(
    ("line", "dates"),
    [
        ("- [ ] a 📅 2026-12-01", TaskDates(due="2026-12-01")),
        ("- [ ] a 📆 2026-12-01", TaskDates(due="2026-12-01")),
        ("- [ ] a 🗓 2026-12-01", TaskDates(due="2026-12-01")),
        ("- [ ] a ⏳ 2026-12-02", TaskDates(scheduled="2026-12-02")),
        ("- [ ] a ⌛ 2026-12-02", TaskDates(scheduled="2026-12-02")),
        ("- [ ] a 🛫 2026-12-03", TaskDates(start="2026-12-03")),
        ("- [ ] a ➕ 2026-12-04", TaskDates(created="2026-12-04")),
        ("- [x] a ✅ 2026-12-05", TaskDates(done="2026-12-05")),
        ("- [-] a ❌ 2026-12-06", TaskDates(cancelled="2026-12-06")),
        ("- [ ] a 📅2026-12-01", TaskDates(due="2026-12-01")),  # the space is optional
        ("- [ ] a 📅   2026-12-01   ", TaskDates(due="2026-12-01")),
        (
            "- [x] all ➕ 2026-01-01 🛫 2026-01-02 ⏳ 2026-01-03 📅 2026-01-04 ✅ 2026-01-05",
            TaskDates("2026-01-04", "2026-01-03", "2026-01-02", "2026-01-01", "2026-01-05"),
        ),
        # Variation selectors: ⏳️ 🛫️ 📅️ as some keyboards and the plugin's own menus write them.
        ("- [ ] a ⏳\ufe0f 2026-12-02", TaskDates(scheduled="2026-12-02")),
        (
            "- [ ] a 🛫\ufe0f 2026-12-03 📅\ufe0f 2026-12-09",
            TaskDates("2026-12-09", start="2026-12-03"),
        ),
    ],
)
def test_emoji_dates(line: str, dates: TaskDates) -> None:
    assert picked(line, "dates", "description", "warnings") == (
        dates,
        "a" if "all" not in line else "all",
        (),
    )


@pytest.mark.parametrize(
    ("line", "priority"),
    [
        ("- [ ] a 🔺", "highest"),
        ("- [ ] a ⏫", "high"),
        ("- [ ] a 🔼", "medium"),
        ("- [ ] a", "none"),
        ("- [ ] a 🔽", "low"),
        ("- [ ] a ⏬", "lowest"),
        ("- [ ] a ⏫\ufe0f", "high"),
        ("- [ ] a⏫", "high"),  # the plugin needs no space before an emoji field
        ("- [ ] a [priority:: highest]", "highest"),
        ("- [ ] a [priority:: high]", "high"),
        ("- [ ] a (priority:: medium)", "medium"),
        ("- [ ] a [priority:: Low]", "low"),
        ("- [ ] a [priority:: lowest]", "lowest"),
    ],
)
def test_priorities(line: str, priority: str) -> None:
    assert picked(line, "priority", "description") == (PRIORITY_NAMES.index(priority), "a")


def test_recurrence_id_and_dependencies_in_emoji_format() -> None:
    task = parse_task_line("- [ ] Pay rent 🔁 every month on the 1st 🆔 rent-1 ⛔ bank_2, tax3", 1)
    assert task is not None
    assert task.description == "Pay rent"
    assert task.recurrence == "every month on the 1st"
    assert (task.task_id, task.depends_on) == ("rent-1", ("bank_2", "tax3"))


def test_recurrence_with_a_variation_selector_keeps_when_done() -> None:
    task = parse_task_line("- [ ] Water plants 🔁\ufe0f every week when done 📅 2026-12-01", 1)
    assert task is not None
    assert (task.recurrence, task.dates.due) == ("every week when done", "2026-12-01")
    assert task.description == "Water plants"


def test_dataview_format_reads_every_tasks_field() -> None:
    line = (
        "- [x] Review [created:: 2026-01-01] [start:: 2026-01-02] (scheduled:: 2026-01-03) "
        "[due:: 2026-01-04] [completion:: 2026-01-05] [cancelled:: 2026-01-06] "
        "[priority:: high] [repeat:: every week] [id:: r1] [dependsOn:: a, b,c]"
    )
    task = parse_task_line(line, 1)
    assert task is not None
    assert task.description == "Review"
    assert task.dates == TaskDates(*(f"2026-01-0{d}" for d in (4, 3, 2, 1, 5, 6)))
    assert (task.priority, task.recurrence) == (1, "every week")
    assert (task.task_id, task.depends_on) == ("r1", ("a", "b", "c"))
    assert (task.fields, task.warnings) == ((), ())


def test_dataview_fields_may_be_separated_by_commas() -> None:
    task = parse_task_line("- [ ] a [due:: 2026-12-01], [priority:: low]", 1)
    assert task is not None
    assert (task.description, task.dates.due, task.priority) == ("a", "2026-12-01", 4)


def test_other_dataview_fields_go_to_fields_in_written_order() -> None:
    task = parse_task_line(
        "- [ ] Call [who:: Ann] about it [project:: Home] 📅 2026-12-01 (mood:: ok)", 1
    )
    assert task is not None
    # a field inside the text stays in the description (the plugin does not take it out)
    assert task.description == "Call [who:: Ann] about it"
    assert task.fields == (("who", "Ann"), ("project", "Home"), ("mood", "ok"))
    assert task.dates.due == "2026-12-01"


def test_a_tasks_field_inside_the_text_is_not_read_as_one() -> None:
    # The plugin reads fields from the end only: this due date is part of the description.
    task = parse_task_line("- [ ] Move [due:: 2026-12-01] to next week", 1)
    assert task is not None
    assert (task.dates.due, task.description) == (None, "Move [due:: 2026-12-01] to next week")
    assert task.fields == (("due", "2026-12-01"),)


@pytest.mark.parametrize(
    ("line", "fields", "warnings"),
    [
        (
            "- [ ] a 📅 2026-13-01",
            (("due", "2026-13-01"),),
            ("due date '2026-13-01' is not a date",),
        ),
        (
            "- [ ] a ⏳ 2026-02-30",
            (("scheduled", "2026-02-30"),),
            ("scheduled date '2026-02-30' is not a date",),
        ),
        (
            "- [x] a ✅ 2026-00-10",
            (("done", "2026-00-10"),),
            ("done date '2026-00-10' is not a date",),
        ),
        (
            "- [ ] a [due:: tomorrow]",
            (("due", "tomorrow"),),
            ("due date 'tomorrow' is not a date",),
        ),
        (
            "- [ ] a [completion:: 2026-1-5]",
            (("completion", "2026-1-5"),),
            ("done date '2026-1-5' is not a date",),
        ),
        (
            "- [ ] a [priority:: urgent]",
            (("priority", "urgent"),),
            ("priority 'urgent' is not one of highest, high, medium, none, low, lowest",),
        ),
    ],
)
def test_malformed_values_stay_as_text_with_a_warning(
    line: str, fields: tuple[tuple[str, str], ...], warnings: tuple[str, ...]
) -> None:
    task = parse_task_line(line, 1)
    assert task is not None
    assert (task.description, task.dates, task.fields, task.warnings) == (
        "a",
        TaskDates(),
        fields,
        warnings,
    )
    assert task.priority == 3


def test_a_malformed_date_does_not_hide_the_fields_before_it() -> None:
    task = parse_task_line("- [ ] a ⏫ 📅 2026-99-99 🛫 2026-12-01", 1)
    assert task is not None
    assert (task.priority, task.dates.start, task.description) == (1, "2026-12-01", "a")


@pytest.mark.parametrize(
    ("line", "description", "due"),
    [
        # an emoji not followed by its value is text, and so is everything left of it
        ("- [ ] Buy 📅 calendar ⏫", "Buy 📅 calendar", None),
        ("- [ ] Check 📅 2026-12-01 is right", "Check 📅 2026-12-01 is right", None),
        (
            "- [ ] Check 📅 2026-12-01 is right 📅 2026-12-24",
            "Check 📅 2026-12-01 is right",
            "2026-12-24",
        ),
        ("- [ ] a 📅 next friday", "a 📅 next friday", None),
        # code and links are no fields
        ("- [ ] a `📅 2026-12-01`", "a `📅 2026-12-01`", None),
        ("- [ ] a [[📅 2026-12-01]]", "a [[📅 2026-12-01]]", None),
        ("- [ ] see [[Note]] 📅 2026-12-01", "see [[Note]]", "2026-12-01"),
    ],
)
def test_description_keeps_text_an_emoji_stands_in(
    line: str, description: str, due: str | None
) -> None:
    assert picked(line, "description", "dates") == (description, TaskDates(due=due))


def test_tags_and_block_ids_may_stand_among_the_fields() -> None:
    task = parse_task_line("- [ ] Plan trip #travel 📅 2026-12-01 #urgent ⏫ ^trip-1 #later", 1)
    assert task is not None
    assert (task.dates.due, task.priority, task.block_id) == ("2026-12-01", 1, "trip-1")
    # tags stay in the description, in their order, the block id does not
    assert task.description == "Plan trip #travel #urgent #later"
    assert task.tags == ("#travel", "#urgent", "#later")


def test_block_id_is_taken_off_the_description() -> None:
    assert picked("- [ ] Write report ^abc-12", "description", "block_id") == (
        "Write report",
        "abc-12",
    )
    # a caret inside a word is no block id
    assert picked("- [ ] x^2 is big", "description", "block_id") == ("x^2 is big", None)


@pytest.mark.parametrize(
    ("line", "tags"),
    [
        ("- [ ] a #one and #two/nested", ("#one", "#two/nested")),
        ("- [ ] a #x#y", ("#x", "#y")),
        ("- [ ] a #one #one", ("#one",)),
        ("- [ ] issue #123 only digits", ()),
        ("- [ ] a `#code` [[Note#Heading]] <span style='color: #fff'>c</span>", ()),
        ("- [ ] no#tag", ()),
    ],
)
def test_tags_follow_the_note_tag_rules(line: str, tags: tuple[str, ...]) -> None:
    assert picked(line, "tags") == (tags,)


def test_raw_keeps_the_line_as_written() -> None:
    line = "  - [ ] a ⏫\ufe0f 📅 2026-12-01 ^b1  "
    assert picked(line, "raw", "description") == (line, "a")


# ---------------------------------------------------------------- a note's tasks (parse_note)


def outline(text: str) -> list[tuple[int, int | None, str | None, str]]:
    """(line, parent_line, heading, description) of each task parse_note finds."""
    return [
        (t.line, t.parent_line, t.heading, t.description) for t in parse_note("n.md", text).tasks
    ]


def test_nesting_follows_list_indentation() -> None:
    text = "- [ ] A\n    - [ ] A1\n        - [x] A1a\n    - [ ] A2\n- [ ] B\n\t- [ ] B1 (tab)\n"
    assert outline(text) == [
        (1, None, None, "A"),
        (2, 1, None, "A1"),
        (3, 2, None, "A1a"),
        (4, 1, None, "A2"),
        (5, None, None, "B"),
        (6, 5, None, "B1 (tab)"),
    ]


def test_a_plain_item_between_keeps_the_task_above_as_parent() -> None:
    text = "- [ ] Trip\n  - Packing\n    - [ ] Tent\n- Shopping\n  - [ ] Bread\n"
    assert outline(text) == [
        (1, None, None, "Trip"),
        (3, 1, None, "Tent"),
        (5, None, None, "Bread"),
    ]


def test_an_item_not_indented_to_the_text_of_the_one_above_is_its_sibling() -> None:
    # "- " puts the text at column 2: one space of indent is not inside it (CommonMark, Obsidian)
    text = "- [ ] A\n    - [ ] A1\n\n - [ ] B\n1. [ ] C\n   - [ ] C1\n"
    assert [(line, parent) for line, parent, _, _ in outline(text)] == [
        (1, None),
        (2, 1),
        (4, None),
        (5, None),
        (6, 5),
    ]


def test_a_paragraph_or_a_heading_ends_the_list() -> None:
    text = (
        "- [ ] A\n\nParagraph.\n  - [ ] B\n- [ ] C\n# H\n  - [ ] D\n"
        "- [ ] E\n  lazy line\n  - [ ] F\n"
    )
    assert [(line, parent) for line, parent, _, _ in outline(text)] == [
        (1, None),
        (4, None),
        (5, None),
        (7, None),
        (8, None),
        (10, 8),
    ]


def test_heading_paths_outermost_first() -> None:
    text = (
        "---\ntitle: x\n---\n"
        "- [ ] before any heading\n"
        "# Work\n"
        "- [ ] w\n"
        "## Reports\n"
        "### Q1\n"
        "- [ ] q\n"
        "## Meetings ##\n"
        "- [ ] m\n"
        "# Home\n"
        "- [ ] h\n"
    )
    assert [(line, heading) for line, _, heading, _ in outline(text)] == [
        (4, None),
        (6, "Work"),
        (9, "Work > Reports > Q1"),
        (11, "Work > Meetings"),
        (13, "Home"),
    ]


def test_tasks_in_quotes_nest_within_the_quote() -> None:
    text = "- [ ] outside\n\n> - [ ] quoted\n>     - [ ] inside quoted\n>\n>   - [ ] after blank\n"
    assert [(line, parent) for line, parent, _, _ in outline(text)] == [
        (1, None),
        (3, None),
        (4, 3),
        (6, 3),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "```\n- [ ] in a fence\n```\n",
        "~~~md\n- [ ] in a tilde fence\n~~~\n",
        "%%\n- [ ] in a comment\n%%\n",
        "<!--\n- [ ] in an html comment\n-->\n",
        "> ```\n> - [ ] in a fence in a quote\n> ```\n",
    ],
)
def test_tasks_in_code_and_comments_are_not_tasks(text: str) -> None:
    note = parse_note("n.md", text + "- [x] real\n")
    assert [t.description for t in note.tasks] == ["real"]
    assert (note.tasks_open, note.tasks_done) == (0, 1)


def test_note_tasks_are_read_as_single_lines_are() -> None:
    text = (
        "# H\n- [ ] Pay #bills [[Bank]] ⏫ 📅 2026-12-01 ^pay\n"
        "  - [/] call [who:: Ann] 🔁 every month\n"
    )
    note = parse_note("n.md", text)
    lines = text.split("\n")
    for task in note.tasks:
        alone = parse_task_line(lines[task.line - 1], task.line)
        assert alone is not None
        assert task._replace(parent_line=None, heading=None) == alone
    assert (note.tasks_open, note.tasks_done) == (1, 1)  # "/" counts as not open, as before


def test_task_line_numbers_count_frontmatter_and_crlf() -> None:
    note = parse_note("n.md", "---\na: 1\n---\r\nText\r\n- [ ] t\r\n")
    assert [(t.line, t.raw, t.description) for t in note.tasks] == [(5, "- [ ] t", "t")]


def test_long_lines_of_field_starts_stay_linear() -> None:
    # Every piece opens a field that never closes at the line end; tried right to left, each
    # start is tried once, so this finishes at once (no timing is asserted).
    pieces = ["[a:: b ", "(c:: ", "🔁 every ", "#t ", "⛔ x, ", "^ ", "📅 2026-", "🆔 "]
    line = "- [ ] " + "".join(pieces) * 20_000 + "the end ⏫"
    task = parse_task_line(line, 1)
    assert task is not None
    assert task.priority == 1
    assert (task.task_id, task.description[-9:]) == (None, "🆔 the end")


def test_unindented_tasks_read_without_the_list_walk_as_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Notes whose tasks all start at the margin skip the list walk: same tasks either way."""
    import re

    from tests.corpora import require_corpora
    from weaver.markdown import tasks

    synthetic = (
        "# A\n- [ ] one 📅 2026-12-01\n  - plain child\n- two, plain\n- [x] three ✅ 2026-11-01\n"
        "## B\n\n1. [/] four #tag ^b4\n```\n- [ ] in code\n```\n- [ ] five\n"
    )
    notes = [("synthetic.md", synthetic)]
    demo = require_corpora() / "tasks-demo"
    notes += [(str(p), p.read_text("utf-8")) for p in sorted(demo.rglob("*.md"))]
    fast = [parse_note(path, text).tasks for path, text in notes]
    monkeypatch.setattr(tasks, "_NESTED_TASK", re.compile(""))  # every note walks its lists
    walked = [parse_note(path, text).tasks for path, text in notes]
    assert fast == walked
    assert [t.description for t in fast[0]] == ["one", "three", "four #tag", "five"]
    assert [t.heading for t in fast[0]] == ["A", "A", "A > B", "A > B"]
