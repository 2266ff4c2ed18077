"""Dataview inline fields as parse_note finds them (Dataview docs: Adding Metadata, Metadata on
Tasks and Lists)."""

from __future__ import annotations

import pytest

from weaver.markdown.parser import parse_note

Field = tuple[str, str, int]


def fields(text: str) -> list[Field]:
    return [(f.key, f.value, f.line) for f in parse_note("n.md", text).inline_fields]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Basic Field:: Some random Value\n", [("Basic Field", "Some random Value", 1)]),
        ("**Bold Field**:: Nice!\n", [("Bold Field", "Nice!", 1)]),
        ("Rating::   9  \n", [("Rating", "9", 1)]),
        ("Empty::\n", [("Empty", "", 1)]),
        ("- item:: in a list\n", [("item", "in a list", 1)]),
        ("1. step:: first\n", [("step", "first", 1)]),
        ("- [ ] owner:: Ann\n", [("owner", "Ann", 1)]),
        ("> quoted:: yes\n", [("quoted", "yes", 1)]),
        ("Links:: [[A]], [[B|b]]\n", [("Links", "[[A]], [[B|b]]", 1)]),
        ("Time:: 10:30\n", [("Time", "10:30", 1)]),
    ],
)
def test_a_field_owning_its_line(text: str, expected: list[Field]) -> None:
    assert fields(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I would rate this a [rating:: 9]! It was (length:: 2 hours) long.\n",
            [("rating", "9", 1), ("length", "2 hours", 1)],
        ),
        ("Up to [parent:: [[Some Note]]] here\n", [("parent", "[[Some Note]]", 1)]),
        (
            "- [ ] Pay [due:: 2026-12-01] (owner:: me)\n",
            [("due", "2026-12-01", 1), ("owner", "me", 1)],
        ),
        ("[mood::  calm ]\n", [("mood", "calm", 1)]),
        ("[a:: b) mismatched\n", []),
        ("[no close:: here\n", []),
        ("[[link::target]] is a typed link, not a field\n", []),
    ],
)
def test_fields_in_brackets_inside_text(text: str, expected: list[Field]) -> None:
    assert fields(text) == expected


def test_a_line_field_and_bracketed_fields_on_one_line_are_all_read_in_order() -> None:
    assert fields("Summary:: good [score:: 5]\n") == [
        ("Summary", "good [score:: 5]", 1),
        ("score", "5", 1),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "`code:: no` and `[x:: no]`\n",
        "```\nfence:: no\n[x:: no]\n```\n",
        "    ~~~\n    indented:: fence\n    ~~~\n",
        "%% hidden:: no %%\n",
        "<!-- hidden:: no -->\n",
        "A sentence with a single colon: no field\n",
        "https://example.com/a::b starts no field\n",
    ],
)
def test_no_fields_in_code_comments_or_plain_text(text: str) -> None:
    assert fields(text) == []


def test_frontmatter_is_not_read_and_lines_count_from_the_file_start() -> None:
    text = "---\ntitle:: not a field\ntags: [a]\n---\n# H\n\nstatus:: draft\r\n- x [n:: 1]\n"
    assert fields(text) == [("status", "draft", 7), ("n", "1", 8)]


def test_keys_are_kept_as_written() -> None:
    assert [key for key, _, _ in fields("Due Date:: x\nDUE-date:: y\n")] == ["Due Date", "DUE-date"]


def test_a_field_still_names_the_relation_of_its_link() -> None:
    note = parse_note("n.md", "up:: [[Parent]]\nsee [next:: [[Next]]]\n")
    assert [(lk.target, lk.relation) for lk in note.links] == [("Parent", "up"), ("Next", "next")]
    assert [(f.key, f.value) for f in note.inline_fields] == [
        ("up", "[[Parent]]"),
        ("next", "[[Next]]"),
    ]
