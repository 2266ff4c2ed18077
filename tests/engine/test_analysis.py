"""weaver.engine.analysis: the pure helpers the built-in workflows share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from weaver.engine.analysis import (
    code,
    find_markers,
    format_duration,
    load_note,
    missing_fields,
    missing_sections,
    note_link,
    parse_moment,
    reading_minutes,
    section_key,
    tag_changes,
    word_counts,
    words_changed,
)
from weaver.errors import InvalidPathError
from weaver.markdown.parser import Heading
from weaver.vault.fs import Vault


def test_reading_time_rounds_up_and_empty_is_zero() -> None:
    assert [reading_minutes(n) for n in (0, 1, 200, 201)] == [0, 1, 1, 2]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-01-05T09:30:00+01:00", datetime(2026, 1, 5, 8, 30, tzinfo=UTC)),
        ("2026-01-05T09:30Z", datetime(2026, 1, 5, 9, 30, tzinfo=UTC)),
        ("2026-01-05", datetime(2026, 1, 5, tzinfo=timezone(timedelta(hours=2)))),
        (1_767_600_000, datetime.fromtimestamp(1_767_600_000, UTC)),
        (1_767_600_000_000, datetime.fromtimestamp(1_767_600_000, UTC)),
    ],
)
def test_times_from_frontmatter(value: object, expected: datetime) -> None:
    zone = timezone(timedelta(hours=2))
    assert parse_moment(value, zone) == int(expected.timestamp() * 1000)


@pytest.mark.parametrize("value", [None, True, "soon", "", ["2026-01-05"], {"at": 1}])
def test_what_is_no_time(value: object) -> None:
    assert parse_moment(value) is None


def test_durations_read_like_a_person_would_say_them() -> None:
    minute = 60_000
    assert format_duration(150 * minute) == "2h 30m"
    assert format_duration(3 * 1440 * minute + 5 * minute) == "3d 5m"
    assert format_duration(45_000) == "45s"
    assert format_duration(0) == "0s"


def test_version_changes() -> None:
    before, after = word_counts("Nodes joined by edges"), word_counts("vertices joined by Edges")
    assert words_changed(before, after) == (1, 1)
    assert tag_changes(["Math", "old"], ["math", "new"]) == (["new"], ["old"])


def test_markers_outside_code_with_file_lines(tmp_path: Path) -> None:
    (tmp_path / "s.md").write_text(
        "---\nstatus: TODO\n---\nTODO first\n```\nTODO not this\n```\n"
        "ok [NEEDS CLARIFICATION: size] and TBD\nTODOS is a word\n",
        encoding="utf-8",
    )
    note = load_note(Vault(tmp_path), "s.md")
    assert note is not None
    assert [(m.line, m.text) for m in find_markers(note)] == [
        (4, "TODO"),
        (8, "[NEEDS CLARIFICATION: size]"),
        (8, "TBD"),
    ]
    assert load_note(Vault(tmp_path), "absent.md") is None
    with pytest.raises(InvalidPathError):
        load_note(Vault(tmp_path), "../s.md")


def test_required_sections_and_fields() -> None:
    headings = [
        Heading(2, "User Scenarios & Testing *(mandatory)*", 3),
        Heading(2, "**Goals**:", 9),
    ]
    assert section_key("  Success   Criteria (optional) ") == "success criteria"
    assert missing_sections(headings, ["user scenarios & testing", "Goals", "Scope"]) == ["Scope"]
    assert missing_fields(
        {"status": "", "owner": "ana", "tags": []}, ["status", "owner", "tags", "x"]
    ) == [
        "status",
        "tags",
        "x",
    ]


def test_mentions_in_notes_weaver_writes() -> None:
    assert note_link("Tasks/report.md", "Write report") == "[[Tasks/report|Write report]]"
    assert note_link("a.md", "a|b") == "[[a]]"
    assert note_link("odd [x].md") == "`odd [x].md`"
    assert code("a`b") == "``a`b``"
    assert code("`x") == "`` `x ``"
