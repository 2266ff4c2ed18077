"""Task lines change as the Tasks plugin changes them: completing adds the done date in the
line's own format, a recurring task gets its next occurrence above it, cancelling and reopening
add and remove their dates, dates and priorities are set in place, and the rest of the line
stays as the user wrote it."""

from __future__ import annotations

from datetime import date

import pytest

from weaver.markdown.tasks import ParsedTask, parse_task_line
from weaver.tasks.line_changes import (
    LineChange,
    TaskLineError,
    WriteSettings,
    change_status,
    set_fields,
)
from weaver.tasks.recurrence import RecurrenceError
from weaver.tasks.statuses import Status, StatusRegistry

TODAY = date(2026, 11, 28)
DEFAULTS = StatusRegistry()


def task(text: str) -> ParsedTask:
    parsed = parse_task_line(text, 1)
    assert parsed is not None
    return parsed


def complete(text: str, settings: WriteSettings | None = None) -> LineChange:
    return change_status(task(text), "x", DEFAULTS, TODAY, settings or WriteSettings())


def test_completing_adds_the_done_date_at_the_end() -> None:
    change = complete("- [ ] buy milk 📅 2026-12-01")
    assert change.lines == ("- [x] buy milk 📅 2026-12-01 ✅ 2026-11-28",)


def test_completing_a_dataview_task_writes_a_completion_field() -> None:
    change = complete("- [ ] buy milk  [due:: 2026-12-01]")
    assert change.new == "- [x] buy milk  [due:: 2026-12-01]  [completion:: 2026-11-28]"


def test_the_done_date_goes_before_a_block_id_and_keeps_indentation() -> None:
    change = complete("    * [ ] nested #home ^abc-1")
    assert change.new == "    * [x] nested #home ✅ 2026-11-28 ^abc-1"


def test_completing_without_the_done_date_setting_only_checks_the_box() -> None:
    change = complete("- [ ] buy milk", WriteSettings(set_done_date=False))
    assert change.new == "- [x] buy milk"


def test_completing_a_recurring_task_writes_the_next_one_above() -> None:
    change = complete("- [ ] take out the trash 🔁 every Sunday 📅 2021-04-25")
    assert change.lines == (
        "- [ ] take out the trash 🔁 every Sunday 📅 2021-05-02",
        "- [x] take out the trash 🔁 every Sunday 📅 2021-04-25 ✅ 2026-11-28",
    )


def test_the_next_occurrence_goes_below_with_the_plugins_setting() -> None:
    change = complete(
        "- [ ] a 🔁 every day 📅 2026-11-28", WriteSettings(recurrence_on_next_line=True)
    )
    assert change.lines == (
        "- [x] a 🔁 every day 📅 2026-11-28 ✅ 2026-11-28",
        "- [ ] a 🔁 every day 📅 2026-11-29",
    )


def test_the_next_occurrence_moves_every_date_and_drops_what_names_this_one() -> None:
    line = (
        "  - [/] mow ⏫ 🔁 every 2 weeks 🆔 m1 ⛔ x9 ➕ 2021-10-01 ⏳ 2021-10-28 📅 2021-10-30 ^mow"
    )
    change = complete(line)
    assert change.inserted == "  - [ ] mow ⏫ 🔁 every 2 weeks ⏳ 2021-11-11 📅 2021-11-13"
    assert change.new == (
        "  - [x] mow ⏫ 🔁 every 2 weeks 🆔 m1 ⛔ x9 ➕ 2021-10-01 ⏳ 2021-10-28 📅 2021-10-30"
        " ✅ 2026-11-28 ^mow"
    )


def test_the_next_occurrence_gets_todays_created_date_with_the_setting() -> None:
    change = complete(
        "- [ ] a 🔁 every week ➕ 2026-01-01 📅 2026-11-28", WriteSettings(set_created_date=True)
    )
    assert change.inserted == "- [ ] a 🔁 every week ➕ 2026-11-28 📅 2026-12-05"


def test_a_dataview_recurring_task_recurs_in_dataview() -> None:
    change = complete("- [ ] pay rent  [repeat:: every month on the 1st]  [due:: 2026-11-01]")
    assert (
        change.inserted == "- [ ] pay rent  [repeat:: every month on the 1st]  [due:: 2026-12-01]"
    )


def test_when_done_counts_from_the_completion_date() -> None:
    change = complete("- [ ] sweep 🔁 every week when done ⏳ 2021-02-06")
    assert change.inserted == "- [ ] sweep 🔁 every week when done ⏳ 2026-12-05"


def test_on_completion_delete_leaves_only_the_next_occurrence() -> None:
    recurring = complete("- [ ] a 🔁 every day 📅 2026-11-28 🏁 delete")
    assert recurring.lines == ("- [ ] a 🔁 every day 📅 2026-11-29 🏁 delete",)
    once = complete("- [ ] b  [onCompletion:: delete]")
    assert once.lines == () and once.deleted
    assert complete("- [ ] c 🏁 keep").lines == ("- [x] c 🏁 keep ✅ 2026-11-28",)


def test_an_unreadable_rule_refuses_to_complete() -> None:
    with pytest.raises(RecurrenceError, match="'every blue moon'"):
        complete("- [ ] howl 🔁 every blue moon 📅 2026-11-28")


def test_a_recurring_task_with_a_malformed_date_is_not_completed() -> None:
    with pytest.raises(TaskLineError, match="due date '2024-02-30' is not a date"):
        complete("- [ ] a 🔁 every year ⏳ 2024-02-28 📅 2024-02-30")


def test_the_next_occurrence_starts_where_the_done_status_toggles_to() -> None:
    registry = StatusRegistry(
        (
            Status(" ", "Todo", "/", "TODO"),
            Status("/", "Doing", "x", "IN_PROGRESS"),
            Status("x", "Done", "/", "DONE"),
        )
    )
    change = change_status(task("- [/] a 🔁 every day 📅 2026-11-28"), "x", registry, TODAY)
    assert change.inserted == "- [/] a 🔁 every day 📅 2026-11-29"


def test_cancelling_adds_the_cancelled_date_and_does_not_recur() -> None:
    change = change_status(task("- [ ] a 🔁 every day 📅 2026-11-28"), "-", DEFAULTS, TODAY)
    assert change.lines == ("- [-] a 🔁 every day 📅 2026-11-28 ❌ 2026-11-28",)


def test_reopening_removes_the_done_and_cancelled_dates() -> None:
    done = change_status(task("- [x] a 📅 2026-11-28 ✅ 2026-11-27 ^b"), " ", DEFAULTS, TODAY)
    assert done.new == "- [ ] a 📅 2026-11-28 ^b"
    gone = change_status(task("- [-] a  [cancelled:: 2026-11-27]"), " ", DEFAULTS, TODAY)
    assert gone.new == "- [ ] a"


def test_changing_to_the_status_it_has_is_refused() -> None:
    with pytest.raises(TaskLineError, match=r"already \[x\]"):
        complete("- [x] a ✅ 2026-11-27")


def test_a_date_in_the_description_is_not_the_field() -> None:
    change = set_fields(
        task("- [ ] move 📅 2020-01-01 to the new plan 📅 2020-01-01"), {"due": "2026-12-24"}
    )
    assert change.new == "- [ ] move 📅 2020-01-01 to the new plan 📅 2026-12-24"


def test_setting_dates_replaces_adds_and_removes_in_the_lines_format() -> None:
    emoji = set_fields(task("- [ ] a ⏳ 2026-11-30 ^id"), {"scheduled": None, "due": "2026-12-01"})
    assert emoji.new == "- [ ] a 📅 2026-12-01 ^id"
    dataview = set_fields(
        task("- [ ] a  [due:: 2026-11-30]"), {"due": "2026-12-01", "start": "2026-11-29"}
    )
    assert dataview.new == "- [ ] a  [due:: 2026-12-01]  [start:: 2026-11-29]"


def test_setting_the_priority_replaces_or_removes_its_sign() -> None:
    assert (
        set_fields(task("- [ ] a 🔼 📅 2026-12-01"), {}, "highest").new
        == "- [ ] a 📅 2026-12-01 🔺"
    )
    assert set_fields(task("- [ ] a ⏫"), {}, "none").new == "- [ ] a"
    assert (
        set_fields(task("- [ ] a  [priority:: low]"), {}, "High").new
        == "- [ ] a  [priority:: high]"
    )


@pytest.mark.parametrize(
    ("dates", "priority"),
    [({"due": "2026-13-01"}, None), ({"due": "tomorrow"}, None), ({}, "urgent")],
)
def test_bad_values_are_refused(dates: dict[str, str], priority: str | None) -> None:
    with pytest.raises(TaskLineError):
        set_fields(task("- [ ] a"), dates, priority)  # type: ignore[arg-type]
