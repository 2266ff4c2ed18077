"""Renaming a tag inside one note: Obsidian's matching, never in code, comments or URLs, the
frontmatter's list, string and comma forms edited in place, merges deduplicated."""

from __future__ import annotations

from weaver.markdown.retag import LineChange, rename_tag_in_text, renamed


def test_matching_is_case_insensitive_and_takes_children() -> None:
    assert renamed("Proj", "proj", "Work") == "Work"
    assert renamed("PROJ/Alpha/x", "proj", "Work") == "Work/Alpha/x"
    assert renamed("projects", "proj", "Work") is None
    assert renamed("a/proj", "proj", "Work") is None


def test_inline_tags_outside_code_comments_links_and_urls() -> None:
    text = (
        "#proj at start, #Proj/sub and #projects\n"
        "`#proj` in code, %% #proj %% and <!-- #proj --> in comments\n"
        "```\n#proj in a fence\n```\n"
        "[[Note#proj]] and https://x.org/#proj and [l](https://x.org/a#proj)\n"
        "$#proj$ math; a#proj is no tag; \\#proj escaped\n"
    )
    result = rename_tag_in_text(text, "proj", "Work")
    assert result.text.splitlines()[0] == "#Work at start, #Work/sub and #projects"
    assert result.text.splitlines()[1:] == text.splitlines()[1:]
    assert result.changes == (
        LineChange(1, "#proj at start, #Proj/sub and #projects", result.text.splitlines()[0]),
    )


def test_frontmatter_forms_are_edited_in_place() -> None:
    text = (
        "---\n"
        "title: '#proj is not a tag here'  # nor here: proj\n"
        "tags:\n"
        "  - proj   # my main tag\n"
        '  - "#Proj/sub"\n'
        "  - other\n"
        "---\nbody\n"
    )
    result = rename_tag_in_text(text, "proj", "Work")
    assert result.text == (
        "---\n"
        "title: '#proj is not a tag here'  # nor here: proj\n"
        "tags:\n"
        "  - Work   # my main tag\n"
        '  - "#Work/sub"\n'
        "  - other\n"
        "---\nbody\n"
    )
    assert [c.line for c in result.changes] == [4, 5]
    comma = rename_tag_in_text("---\ntags: a, proj/x, b\n---\n", "proj", "Work")
    assert comma.text == "---\ntags: a, Work/x, b\n---\n"
    single = rename_tag_in_text("---\nTags: proj\n---\n", "proj", "Work")
    assert single.text == "---\nTags: Work\n---\n"
    flow = rename_tag_in_text("---\ntags: [proj, b]\n---\n", "PROJ", "Work")
    assert flow.text == "---\ntags: [Work, b]\n---\n"


def test_merging_into_an_existing_tag_drops_the_duplicate_item() -> None:
    block = rename_tag_in_text("---\ntags:\n  - work\n  - proj\n---\n#proj\n", "proj", "Work")
    assert block.text == "---\ntags:\n  - work\n---\n#Work\n"
    flow = rename_tag_in_text("---\ntags: [work, proj, x]\n---\n", "proj", "work")
    assert flow.text == "---\ntags: [work, x]\n---\n"


def test_invalid_yaml_and_untagged_notes_are_left_alone() -> None:
    broken = "---\ntags: [proj\n---\n#proj\n"
    assert rename_tag_in_text(broken, "proj", "w").text == "---\ntags: [proj\n---\n#w\n"
    assert rename_tag_in_text("nothing here", "proj", "w").changes == ()


def test_offsets_after_non_ascii_and_quoted_keys() -> None:
    text = '---\ntítulo: "café ☕ — ñ"\n"tags": [ünï, proj]\n---\n'
    assert rename_tag_in_text(text, "proj", "w").text == text.replace("proj]", "w]")
    text = "---\nnote: 'it''s'\ntags:\n  - 'proj'\n---\n"
    assert rename_tag_in_text(text, "proj", "w").text == text.replace("'proj'", "'w'")


def test_tags_in_html_markup_are_left_and_tags_after_tags_renamed() -> None:
    text = '<span style="color: #proj">#x #proj</span>\n<div>\n#proj\n</div>\n\n#a#proj\n'
    result = rename_tag_in_text(text, "proj", "Work")
    assert result.text == (
        '<span style="color: #proj">#x #Work</span>\n<div>\n#proj\n</div>\n\n#a#Work\n'
    )
