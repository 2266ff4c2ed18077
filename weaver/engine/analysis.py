"""Note analysis shared by the built-in workflows: what a note contains, and how it changed.

Parsing itself is `weaver.markdown.parser`'s (links, tags, headings, tasks and words as the cache
sees them); this module only reads a note from the vault and derives what the workflows report from
the parsed note: reading time, the heading outline, link and embed counts, the words, links and
tags one version adds or removes, TODO-style markers, required sections, times written in
frontmatter, and how to mention a note in a note Weaver writes. Everything but `load_note` is
pure. Line numbers here are 1-based, as an editor shows them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from weaver.errors import NoteNotFoundError, NoteTooLargeError
from weaver.markdown.parser import Heading, ParsedNote, decode_note, parse_note
from weaver.markdown.patterns import normalize_tag
from weaver.vault.fs import Vault

# Silent reading speed of an adult reading prose, words per minute.
DEFAULT_WORDS_PER_MINUTE = 200
# Markers of unfinished writing; `[NEEDS CLARIFICATION: ...]` is spec-kit's own.
MARKER = re.compile(r"\b(TODO|TBD|FIXME|XXX)\b|\[NEEDS CLARIFICATION\b[^\]]*\]?")
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
# Words for diffing versions: letters, digits, `_` and `'`, case-folded. Close to the parser's
# word count (which splits on ASCII punctuation), without needing its masked text.
_WORD = re.compile(r"[\w']+")
# A number this large is epoch milliseconds, smaller ones epoch seconds (year 5138 and later).
_MS_THRESHOLD = 10**11
# Characters that would break a `[[wikilink]]` written around a path.
_UNLINKABLE = re.compile(r"[\[\]|#^]")


@dataclass(frozen=True, slots=True)
class LoadedNote:
    """A note as read from disk now: its text (BOM removed) and what the parser made of it."""

    path: str
    text: str
    parsed: ParsedNote
    read_error: str | None = None  # why `text` is empty: not UTF-8, or too large to read

    @property
    def body_first_line(self) -> int:
        """The 1-based file line on which the body (after the frontmatter) starts."""
        return self.text.count("\n", 0, len(self.text) - len(self.parsed.body)) + 1


@dataclass(frozen=True, slots=True)
class Marker:
    line: int
    text: str  # the marker itself: "TODO", "TBD", "[NEEDS CLARIFICATION: ...]"
    context: str  # the whole line, stripped


def load_note(vault: Vault, path: str) -> LoadedNote | None:
    """Read and parse a note; None when it is not there (any more). A note too large to read
    comes back empty, `read_error` saying so. Raises `InvalidPathError` for a path that is no
    note of the vault (the workflow's input came from a user)."""
    try:
        data = vault.read_note(path)
    except (NoteNotFoundError, FileNotFoundError):
        return None
    except NoteTooLargeError as exc:
        return LoadedNote(path, "", parse_note(path, ""), str(exc))
    text, error = decode_note(data)  # BOM removed
    return LoadedNote(path, text, parse_note(path, text), error)


# -- what a note contains -----------------------------------------------------------------------


def reading_minutes(words: int, words_per_minute: int = DEFAULT_WORDS_PER_MINUTE) -> int:
    """Whole minutes, rounded up: a 30-word note is a 1-minute read, an empty one 0."""
    return math.ceil(words / max(words_per_minute, 1))


def outline(headings: Iterable[Heading]) -> list[dict[str, Any]]:
    return [{"level": h.level, "text": h.text, "line": h.line + 1} for h in headings]


def count_links(note: ParsedNote) -> tuple[int, int]:
    """(links, embeds): an embed (`![[x]]`) is counted once, as an embed."""
    embeds = sum(1 for link in note.links if link.kind == "embed")
    return len(note.links) - embeds, embeds


def link_targets(note: ParsedNote) -> set[str]:
    """The notes and files it links to, as written (self-links left out)."""
    return {link.target for link in note.links if link.target}


def tag_spellings(tags: Iterable[str]) -> dict[str, str]:
    """Tag key (case-folded) -> first spelling."""
    found: dict[str, str] = {}
    for tag in tags:
        found.setdefault(normalize_tag(tag), tag.removeprefix("#"))
    return found


# -- how a version changed ----------------------------------------------------------------------


def word_counts(body: str) -> Counter[str]:
    return Counter(_WORD.findall(body.casefold()))


def words_changed(old: Mapping[str, int], new: Mapping[str, int]) -> tuple[int, int]:
    """(added, removed) word occurrences: a reworded sentence adds some and removes others."""
    before, after = Counter(old), Counter(new)
    return sum((after - before).values()), sum((before - after).values())


def set_changes(old: Iterable[str], new: Iterable[str]) -> tuple[list[str], list[str]]:
    """(added, removed), each sorted."""
    before, after = set(old), set(new)
    return sorted(after - before), sorted(before - after)


def tag_changes(old: Iterable[str], new: Iterable[str]) -> tuple[list[str], list[str]]:
    """(added, removed) tags, compared case-insensitively, in their current spelling."""
    before, after = tag_spellings(old), tag_spellings(new)
    added = [after[key] for key in sorted(after.keys() - before.keys())]
    removed = [before[key] for key in sorted(before.keys() - after.keys())]
    return added, removed


# -- reviewing ----------------------------------------------------------------------------------


def find_markers(note: LoadedNote) -> list[Marker]:
    """TODO, TBD, FIXME, XXX and `[NEEDS CLARIFICATION]` in the body, outside fenced code."""
    found: list[Marker] = []
    fence: str | None = None
    for number, line in enumerate(note.parsed.body.splitlines(), note.body_first_line):
        opened = _FENCE.match(line)
        if opened is not None:
            mark = opened.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence):
                fence = None
            continue
        if fence is None:
            found.extend(Marker(number, m.group(0), line.strip()) for m in MARKER.finditer(line))
    return found


def section_key(text: str) -> str:
    """A heading as compared with a required section name: case-folded, emphasis and a
    trailing `(mandatory)`-style remark dropped, spaces collapsed."""
    text = re.sub(r"[*_`]", "", text)
    text = re.sub(r"\s*\([^)]*\)\s*$", "", text)
    return " ".join(text.casefold().split()).rstrip(":")


def missing_sections(headings: Iterable[Heading], required: Sequence[str]) -> list[str]:
    present = {section_key(h.text) for h in headings}
    return [name for name in required if section_key(name) not in present]


def missing_fields(frontmatter: Mapping[str, Any], required: Sequence[str]) -> list[str]:
    """Required frontmatter keys that are absent or blank (null, "", [])."""
    return [name for name in required if frontmatter.get(name) in (None, "", [], {})]


# -- times --------------------------------------------------------------------------------------


def parse_moment(value: object, zone: tzinfo | None = None) -> int | None:
    """A time written in frontmatter as Unix epoch ms, or None when it is none.

    Obsidian keeps dates as strings: `2026-01-05` (midnight), `2026-01-05T09:30`,
    `2026-01-05 09:30`, with or without an offset; a time without one is in `zone` (the
    machine's own when None). A number is epoch seconds, or milliseconds when it is large.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return int(value if abs(value) >= _MS_THRESHOLD else value * 1000)
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone) if zone is not None else moment.astimezone()
    return int(moment.timestamp() * 1000)


def format_duration(ms: int) -> str:
    """`2d 3h`, `2h 30m`, `45m`, `30s`: the two largest units that are not zero."""
    seconds = max(ms, 0) // 1000
    parts = [
        (seconds // 86_400, "d"),
        (seconds % 86_400 // 3600, "h"),
        (seconds % 3600 // 60, "m"),
        (seconds % 60, "s"),
    ]
    shown = [f"{value}{unit}" for value, unit in parts if value]
    return " ".join(shown[:2]) or "0s"


# -- writing about notes ------------------------------------------------------------------------


def note_link(path: str, label: str | None = None) -> str:
    """A wikilink to a note that exists, by its full path so it cannot resolve elsewhere; a
    code span when the path holds characters a wikilink cannot."""
    if _UNLINKABLE.search(path):
        return code(path)
    target = path[:-3] if path.lower().endswith(".md") else path
    if not label or _UNLINKABLE.search(label) or label == target:
        return f"[[{target}]]"
    return f"[[{target}|{label}]]"


def code(text: str) -> str:
    """Inline code that no backtick inside can end: a path of a deleted note, a tag, a target
    (written as code so the note Weaver writes holds no link or tag of its own)."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
