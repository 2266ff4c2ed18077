"""`chunk_note`: sections, prefixes, overlap. Pure, so no model is needed."""

from __future__ import annotations

from weaver.semantic.chunks import MAX_WORDS, OVERLAP_WORDS, chunk_note


def test_each_heading_section_is_a_chunk_prefixed_with_title_and_heading_path() -> None:
    body = "Intro words.\n# Setup\nFirst.\n## Mobile\nOn the phone.\n# Later\nEnd.\n"
    chunks = chunk_note("Sync", body)
    assert [c.heading for c in chunks] == ["", "Setup", "Setup › Mobile", "Later"]
    assert chunks[2].text == "Sync › Setup › Mobile\n\nOn the phone."
    assert chunks[2].body == "On the phone."


def test_aliases_and_tags_go_with_the_first_chunk_only() -> None:
    chunks = chunk_note("Sync", "Intro.\n# Part\nMore.", aliases=["Obsidian Sync"], tags=["app"])
    assert chunks[0].text.splitlines()[:3] == ["Sync", "also: Obsidian Sync", "tags: app"]
    assert "also:" not in chunks[1].text and "tags:" not in chunks[1].text


def test_headings_inside_code_fences_are_text() -> None:
    chunks = chunk_note("T", "# Real\n```\n# not a heading\n```\nafter")
    assert [c.heading for c in chunks] == ["Real"]
    assert "# not a heading" in chunks[0].body


def test_long_sections_are_split_into_overlapping_windows() -> None:
    words = [f"w{i}" for i in range(MAX_WORDS * 2 + 10)]
    chunks = chunk_note("T", " ".join(words))
    assert len(chunks) == 3
    assert all(len(c.body.split()) <= MAX_WORDS for c in chunks)
    first, second = chunks[0].body.split(), chunks[1].body.split()
    assert first[-OVERLAP_WORDS:] == second[:OVERLAP_WORDS]
    assert chunks[-1].body.split()[-1] == words[-1]  # nothing lost at the end


def test_an_empty_note_still_has_its_title_chunk() -> None:
    chunks = chunk_note("Empty", "  \n# Heading only\n", aliases=["E"])
    assert len(chunks) == 1
    assert chunks[0].text == "Empty\nalso: E"
