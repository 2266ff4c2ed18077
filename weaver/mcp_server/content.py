"""A note's text as answers carry it: one page, or one section, sized for a context window;
and the lines of the notes linking to one (the backlinks pane's context).

A page is at most `length` characters and at most `sizing.TEXT_TOKEN_BUDGET` estimated tokens
(a page of Chinese text holds fewer characters than one of English), so that every default
answer of `get_file_content` stays under the bound whatever the note is written in.
"""

from __future__ import annotations

from collections.abc import Sequence

from weaver.errors import NoteDecodeError, WeaverError, did_you_mean, suggest
from weaver.markdown.parser import parse_note
from weaver.markdown.sections import find_section
from weaver.mcp_server.schemas import BacklinkContext, BacklinkLine, FileContentData
from weaver.mcp_server.sizing import fit_text
from weaver.vault.fs import Vault

CONTEXT_LINES = 3
CONTEXT_CHARS = 300


class SectionNotFoundError(WeaverError):
    """A `section` names no heading or block of the note (with the headings it may mean)."""

    def __init__(self, path: str, section: str, close: Sequence[str]) -> None:
        hint = f" ({did_you_mean(close)})" if close else " (the note has no such heading)"
        super().__init__(f"Section not found: {section!r} in {path!r}{hint}")


def decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise NoteDecodeError(path, f"invalid byte at offset {exc.start}") from None


def read_page(
    vault: Vault, path: str, offset: int, length: int, section: str | None
) -> FileContentData:
    """The note at `path` (checked), or its `section`, from `offset` on: one page."""
    data = vault.read_note(path)
    text = decode(path, data)
    if section is not None:
        text = section_text(path, text, section)
    page = text[offset : offset + length]
    page = page[: fit_text(page)]
    end = offset + len(page)
    more = end < len(text)
    return FileContentData(
        path=path,
        content=page,
        size=len(data),
        offset=min(offset, len(text)),
        total_length=len(text),
        truncated=more,
        next_offset=end if more else None,
        section=section,
    )


def section_text(path: str, text: str, section: str) -> str:
    headings = parse_note(path, text).headings
    found = find_section(text, headings, section)
    if found is None:
        last = section.replace("::", "#").rsplit("#", 1)[-1].strip()
        raise SectionNotFoundError(path, section, suggest(last, (h.text for h in headings)))
    return text[found.start : found.end]


def backlink_context(
    vault: Vault, lines: dict[str, list[int]], sources: Sequence[str]
) -> list[BacklinkContext]:
    """For each source (in order), the first lines linking here, read from disk."""
    found = []
    for source in sources:
        wanted = lines.get(source, [])[:CONTEXT_LINES]
        try:
            text = decode(source, vault.read_note(source)).split("\n")
        except (WeaverError, OSError):  # changed or gone since it was indexed: no context
            text = []
        found.append(
            BacklinkContext(
                path=source,
                lines=[
                    BacklinkLine(line=n, text=text[n].strip()[:CONTEXT_CHARS])
                    for n in wanted
                    if n < len(text)
                ],
            )
        )
    return found
