"""Edits inside a note's text: append/prepend after the frontmatter, sections by heading path
(Obsidian's heading text rules, `::` inside a heading), blocks by ^id, find and replace with a
bounded regex, and the diff summary."""

from __future__ import annotations

import pytest

from weaver.markdown.patch import (
    Position,
    TextEditError,
    append_text,
    edit_block,
    edit_section,
    find_section,
    list_blocks,
    list_headings,
    normalize_heading,
    prepend_text,
    replace_text,
    summarize_diff,
)

NOTE = """---
title: Plan
---
# Project
Intro.

## Tasks
- [ ] one ^t1
- [ ] two

### Done
- [x] zero

## Notes: [[Link]] #tag
Paragraph line one
line two ^para

```md
## Not a heading
text ^notablock
```
# Other
end"""


def test_append_goes_on_a_line_of_its_own() -> None:
    assert append_text("a", "b") == "a\nb\n"
    assert append_text("a\n", "b\n") == "a\nb\n"
    assert append_text("", "b") == "b\n"


def test_prepend_goes_after_the_frontmatter() -> None:
    assert prepend_text("---\nx: 1\n---\nbody\n", "top") == "---\nx: 1\n---\ntop\nbody\n"
    assert prepend_text("body", "top") == "top\nbody"
    assert prepend_text("---\nnot closed\nbody", "top") == "top\n---\nnot closed\nbody"


def test_headings_in_code_are_not_headings() -> None:
    body = NOTE.split("---\n", 2)[2]
    texts = [h.text for h in list_headings(body)]
    assert texts == ["Project", "Tasks", "Done", "Notes: [[Link]] #tag", "Other"]


def test_a_heading_path_matches_as_obsidian_links_do() -> None:
    body = NOTE.split("---\n", 2)[2]
    assert find_section(body, "Project::Tasks").text == "Tasks"
    assert find_section(body, "project :: tasks :: DONE").text == "Done"
    assert find_section(body, "Tasks").text == "Tasks"  # any depth under the root
    assert find_section(body, "Notes [[Link]] tag").text == "Notes: [[Link]] #tag"
    assert normalize_heading("A | B ^ C") == normalize_heading("a b c")
    section = find_section(body, "Tasks")
    assert body[section.start : section.end].endswith("- [x] zero\n\n")  # ### Done inside


def test_a_heading_with_double_colons_in_its_text() -> None:
    body = "# Project::Alpha\ntext\n## Tasks\n- a\n# Project\n## Beta\n"
    assert find_section(body, "Project::Alpha::Tasks").text == "Tasks"
    assert find_section(body, "Project::Beta").text == "Beta"
    assert find_section(body, "Project::Alpha").text == "Project::Alpha"


def test_a_missing_heading_names_the_headings_the_note_has() -> None:
    body = NOTE.split("---\n", 2)[2]
    with pytest.raises(TextEditError, match=r"no heading path 'Other::Tasks'.*# Project, ## Tasks"):
        find_section(body, "Other::Tasks")
    with pytest.raises(TextEditError, match="it has no headings"):
        find_section("plain", "X")
    with pytest.raises(TextEditError, match="must name 1 to"):
        find_section("# A", "  ")
    with pytest.raises(TextEditError, match="must name 1 to"):
        find_section("# A", "::".join(["A"] * 40))


def test_section_before_after_and_replace() -> None:
    after = edit_section(NOTE, "Project::Tasks", "after", "- [ ] three")
    assert "- [ ] two\n- [ ] three\n\n### Done\n- [x] zero\n\n## Notes" in after
    before = edit_section(NOTE, "Tasks", "before", "Intro to tasks")
    assert "## Tasks\nIntro to tasks\n- [ ] one" in before
    replaced = edit_section(NOTE, "Tasks::Done", "replace", "- [x] all")
    assert "### Done\n- [x] all\n\n## Notes" in replaced
    assert replaced.startswith("---\ntitle: Plan\n---\n")
    last = edit_section("# A\ntext", "A", "after", "more")
    assert last == "# A\ntext\nmore\n"
    empty = edit_section("# A", "A", "before", "x")
    assert empty == "# A\nx\n"


NESTED = """---
tags: [plan]
---
# Book
Preface.

## Part one
Part one's text.

### Chapter 1
Chapter text.

## Part two
### Chapter 2
Last words.
"""


@pytest.mark.parametrize(
    ("path", "position", "expected"),
    [
        # `after` ends at the heading's own text: never inside its first sub-section.
        ("Book", "after", "# Book\nPreface.\nNEW\n\n## Part one"),
        ("Book::Part one", "after", "Part one's text.\nNEW\n\n### Chapter 1"),
        ("Part one::Chapter 1", "after", "Chapter text.\nNEW\n\n## Part two"),
        # A heading with no own text: just under it, before its sub-heading.
        ("Part two", "after", "## Part two\nNEW\n### Chapter 2"),
        # `end_of_section` goes after every nested sub-section.
        ("Book", "end_of_section", "### Chapter 2\nLast words.\nNEW\n"),
        ("Book::Part one", "end_of_section", "Chapter text.\nNEW\n\n## Part two"),
        ("Part two", "end_of_section", "Last words.\nNEW\n"),
        # The last section of the file: its own text and its section end together.
        ("Chapter 2", "after", "Last words.\nNEW\n"),
        ("Chapter 2", "end_of_section", "Last words.\nNEW\n"),
        ("Book", "before", "# Book\nNEW\nPreface."),
        ("Part two", "before", "## Part two\nNEW\n### Chapter 2"),
    ],
)
def test_positions_in_nested_sections(path: str, position: Position, expected: str) -> None:
    edited = edit_section(NESTED, path, position, "NEW")
    assert expected in edited
    assert edited.count("NEW") == 1
    assert edited.replace("NEW\n", "", 1) == NESTED  # nothing else moved


def test_replace_takes_the_whole_section_with_its_sub_sections() -> None:
    replaced = edit_section(NESTED, "Part one", "replace", "Gone.")
    assert "## Part one\nGone.\n\n## Part two" in replaced
    assert "Chapter 1" not in replaced


def test_the_end_of_a_last_section_without_a_final_newline() -> None:
    assert edit_section("# A\n## B\ntext", "A", "after", "x") == "# A\nx\n## B\ntext"
    assert edit_section("# A\n## B\ntext", "A", "end_of_section", "x") == "# A\n## B\ntext\nx\n"
    assert edit_section("# A\n## B", "B", "after", "x") == "# A\n## B\nx\n"


def test_blocks_by_id() -> None:
    body = NOTE.split("---\n", 2)[2]
    ids = [b.block_id for b in list_blocks(body)]
    assert ids == ["t1", "para"]  # not the one in the code block
    replaced = edit_block(NOTE, "^para", "replace", "New paragraph")
    assert "## Notes: [[Link]] #tag\nNew paragraph ^para\n\n```md" in replaced
    assert "- [ ] zero ^t1" in edit_block(NOTE, "t1", "replace", "- [ ] zero")
    before = edit_block(NOTE, "t1", "before", "- [ ] first")
    assert "## Tasks\n- [ ] first\n- [ ] one ^t1" in before
    after = edit_block(NOTE, "T1", "after", "- [ ] one and a half")
    assert "- [ ] one ^t1\n- [ ] one and a half\n- [ ] two" in after
    own = "Table row\nsecond\n^tbl\n"
    assert edit_block(own, "tbl", "replace", "new") == "new\n^tbl\n"
    with pytest.raises(TextEditError, match=r"no block \^nope.*\^t1, \^para"):
        edit_block(NOTE, "nope", "after", "x")
    with pytest.raises(TextEditError, match="it has no block ids"):
        edit_block("text", "x", "after", "y")


def test_find_and_replace_literal_and_regex() -> None:
    text = "---\ntitle: cat\n---\nA cat, a Cat. (1+1)\n"
    assert replace_text(text, "cat", "dog") == ("---\ntitle: cat\n---\nA dog, a Cat. (1+1)\n", 1)
    assert replace_text(text, "cat", "dog", ignore_case=True)[1] == 2
    assert replace_text(text, "cat", "dog", include_frontmatter=True)[1] == 2
    assert replace_text(text, "(1+1)", r"\1")[0].endswith(r"\1" + "\n")  # literal both ways
    new, count = replace_text(text, r"(?P<w>[Cc]at)\b", r"<\g<w>>", use_regex=True)
    assert count == 2 and "A <cat>, a <Cat>." in new
    assert replace_text(text, "absent", "x") == (text, 0)
    with pytest.raises(TextEditError, match="invalid regular expression"):
        replace_text(text, "(", "x", use_regex=True)
    with pytest.raises(TextEditError, match="invalid replacement"):
        replace_text(text, "cat", r"\3", use_regex=True)
    with pytest.raises(TextEditError, match="empty"):
        replace_text(text, "", "x")


def test_a_regex_that_never_ends_is_stopped() -> None:
    with pytest.raises(TextEditError, match="ran longer than"):
        replace_text("x" * 5000, r"(x+x+)+y", "z", use_regex=True, timeout=0.1)


def test_diff_summary() -> None:
    old = "\n".join(f"line {i}" for i in range(1000))
    new = old.replace("line 500", "line five hundred")
    summary = summarize_diff(old, new)
    assert (summary.lines_added, summary.lines_removed) == (1, 1)
    assert summary.preview == ("-line 500", "+line five hundred")
    assert summarize_diff("a", "a").preview == ()
