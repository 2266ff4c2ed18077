"""Frontmatter edits that keep what the user wrote: comments, order, quoting, indentation."""

from __future__ import annotations

import pytest

from weaver.markdown.patch import TextEditError
from weaver.markdown.properties import add_tags, edit_frontmatter, remove_tags

HAND_WRITTEN = """---
# written by hand
title: 'Quoted title'   # why it matters
date: 2024-07-21
tags:
  - Project
  - "draft"
nested:
    key: value
flow: [a, b]
---
body #inline
"""


def test_untouched_keys_stay_byte_for_byte() -> None:
    new = edit_frontmatter(HAND_WRITTEN, set_={"status": "active"})
    assert new == HAND_WRITTEN.replace("---\nbody", "status: active\n---\nbody")


def test_set_keeps_the_key_in_place_and_delete_removes_it() -> None:
    new = edit_frontmatter(HAND_WRITTEN, set_={"Date": "2025-01-01", "flow": None})
    assert "date: '2025-01-01'\ntags:" in new and "flow" not in new
    new = edit_frontmatter(HAND_WRITTEN, delete=["nested", "missing"])
    assert "nested" not in new and "    key" not in new and "# why it matters" in new


def test_merge_adds_missing_list_items_and_merges_mappings() -> None:
    new = edit_frontmatter(
        HAND_WRITTEN,
        merge={"tags": ["#project", "new"], "flow": ["b", "c"], "nested": {"other": 1}},
    )
    assert '  - Project\n  - "draft"\n  - new\n' in new
    assert "flow: [a, b, c]" in new
    assert "nested:\n    key: value\n    other: 1\n" in new


def test_tags_and_aliases_as_obsidian_writes_them() -> None:
    new = edit_frontmatter("body\n", set_={"tags": ["#a", "b/c"], "aliases": "Other name"})
    assert new == "---\ntags:\n  - a\n  - b/c\naliases:\n  - Other name\n---\nbody\n"
    assert add_tags("---\ntags: x, y\n---\n", ["z"]) == "---\ntags:\n  - x\n  - y\n  - z\n---\n"
    with pytest.raises(TextEditError, match="not a valid tag"):
        edit_frontmatter("x", set_={"tags": ["two words"]})


def test_remove_tags_and_an_emptied_block_goes() -> None:
    assert remove_tags(HAND_WRITTEN, ["DRAFT"]).count("draft") == 0
    assert remove_tags("---\ntags: [a]\n---\nbody", ["a"]) == "body"
    assert remove_tags("no block", ["a"]) == "no block"


def test_invalid_yaml_is_refused_with_its_line() -> None:
    with pytest.raises(TextEditError, match="not valid YAML at line 4"):
        edit_frontmatter("---\ntitle: ok\nbad: [unclosed\n---\nbody", set_={"x": 1})
    with pytest.raises(TextEditError, match="not a mapping"):
        edit_frontmatter("---\n- a\n---\nbody", set_={"x": 1})


def test_a_block_at_the_very_end_of_the_file() -> None:
    assert edit_frontmatter("---\na: 1\n---", set_={"b": 2}) == "---\na: 1\nb: 2\n---\n"
    assert edit_frontmatter("---\n---\nbody", set_={"b": 2}) == "---\nb: 2\n---\nbody"
    assert edit_frontmatter("---\r\na: 1\r\n---\r\n", set_={"b": 2}).startswith("---\na: 1")
