"""`find_section`: a heading's section, a heading path, a block, as Obsidian links name them."""

from __future__ import annotations

from weaver.markdown.parser import parse_note
from weaver.markdown.sections import find_section, split_section

NOTE = """---
title: Guide
---
# Guide
intro
## Setup
general setup
### Linux
apt install
```
# not a heading
```
### macOS
brew install
## Use
Run it. ^run-it

- item one
- item two ^item2

| a | b |
|---|---|
| 1 | 2 |

^table
"""


def section(name: str) -> str | None:
    found = find_section(NOTE, parse_note("guide.md", NOTE).headings, name)
    return None if found is None else NOTE[found.start : found.end]


def test_a_heading_runs_to_the_next_heading_of_its_level_or_higher() -> None:
    assert section("Setup") == (
        "## Setup\ngeneral setup\n### Linux\napt install\n```\n# not a heading\n```\n"
        "### macOS\nbrew install\n"
    )
    assert section("setup::  LINUX") == "### Linux\napt install\n```\n# not a heading\n```\n"
    assert section("Guide#Setup#macOS") == "### macOS\nbrew install\n"
    assert (section("Guide") or "").startswith("# Guide\nintro\n## Setup")


def test_a_heading_path_must_nest() -> None:
    assert section("Use::Linux") is None
    assert section("Nowhere") is None
    assert section("not a heading") is None  # inside a code block
    assert section("::") is None


def test_blocks_by_id() -> None:
    assert section("^run-it") == "Run it. ^run-it\n"
    assert section("^item2") == "- item two ^item2\n"
    assert section("^table") == "| a | b |\n|---|---|\n| 1 | 2 |\n\n^table\n"
    assert section("^missing") is None
    assert split_section("^run-it") == ["^run-it"]
    assert split_section("A::B#C") == ["A", "B", "C"]
