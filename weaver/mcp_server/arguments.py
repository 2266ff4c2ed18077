"""The argument types the tools share, each defined once: paging (`Limit`, `Offset` and the
ranges of the tools that page differently), filters (`Filter`, `Directory`, `Tag`), `NotePath`,
`Time`, and the functions that bring a client's spelling of a path or tag to the cache's.

Limits and offsets are clamped into range rather than refused (`clamp_to`), and a blank
optional filter counts as left out: models send both often, and neither is worth an error.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from weaver.cache.records import PAGE_MAX_LIMIT
from weaver.engine.analysis import parse_moment
from weaver.engine.engine import HISTORY_MAX_LIMIT
from weaver.markdown.patterns import normalize_tag
from weaver.mcp_server.envelope import ArgumentError

__all__ = [
    "DEFAULT_CONTENT_CHARS",
    "MAX_CONTENT_CHARS",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "MAX_TIME",
    "SEARCH_MAX_LIMIT",
    "ContentLength",
    "ContentOffset",
    "Direction",
    "Directory",
    "Filter",
    "GraphLimit",
    "HistoryLimit",
    "HubLimit",
    "Limit",
    "LinksLimit",
    "NeighborLimit",
    "NotePath",
    "Offset",
    "RecordLimit",
    "RecordOffset",
    "Relation",
    "SearchLimit",
    "SimilarLimit",
    "Tag",
    "TagList",
    "TaggedLimit",
    "Time",
    "clamp_to",
    "filter_tag",
    "has_more",
    "normalize_directory",
    "normalize_path",
    "tag_key",
]

MAX_LIMIT = 500
SEARCH_MAX_LIMIT = 100  # full-text hits carry snippets: smaller pages
# Offsets beyond this are clamped: far past any vault, and well inside SQLite's integers.
MAX_OFFSET = 2**31 - 1
# get_file_content's page: any note a person writes, whole; past it a client would choke on
# one answer (a 64 MiB log file, say), so it comes in pages.
# get_file_content's page: most notes whole by default (~13,000 tokens of English), and never
# more than a client takes in one answer (see `sizing`); a longer note comes in pages.
DEFAULT_CONTENT_CHARS = 40_000
MAX_CONTENT_CHARS = 100_000
# Far beyond any clock Weaver will meet, well inside SQLite's integers.
MAX_TIME = 2**53
TIME_FORMATS = (
    "Unix epoch milliseconds, or an ISO date or date-time ('2026-11-20', '2026-11-20T09:30',"
    " '2026-11-20T09:30:00Z'; local time without an offset)"
)


def clamp_to(low: int, high: int) -> BeforeValidator:
    """Bring an integer (or an integer-like string or float) into [low, high] before validation.

    Anything else is left alone, so a wrong type is still reported by the argument's name. Use
    it after `Field(ge=low, le=high)` in `Annotated[...]`: the schema then shows the range, and
    out-of-range values are clamped instead of rejected (`Field` first, or the schema gets
    `ge`/`le` keys instead of `minimum`/`maximum`).
    """

    def clamp(value: object) -> object:
        if isinstance(value, bool):  # an int to Python, and to pydantic's lax mode: `true` -> 1
            raise ValueError("a boolean is not a number")
        number: int | None = None
        if isinstance(value, int):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            number = int(value.strip())
        return value if number is None else min(max(number, low), high)

    return BeforeValidator(clamp)


def _blank_to_none(value: object) -> object:
    """Some clients send "" for an optional filter they mean to leave out."""
    return None if isinstance(value, str) and not value.strip() else value


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _epoch_ms(value: object) -> object:
    """A time argument given as text becomes Unix epoch ms; anything else is left for
    validation, which names the argument if it is not an integer."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:  # some clients send "" for an optional argument they mean to leave out
        return None
    if text.lstrip("+-").isdigit():
        return int(text)
    moment = parse_moment(text)
    if moment is None:
        raise ValueError(f"expected {TIME_FORMATS}")
    return moment


# ---------------------------------------------------------------- paging

Limit = Annotated[
    int,
    Field(ge=1, le=MAX_LIMIT, description="Maximum results, 1-500 (out of range: clamped)"),
    clamp_to(1, MAX_LIMIT),
]
Offset = Annotated[
    int,
    Field(ge=0, le=MAX_OFFSET, description="Results to skip, for pagination (negative -> 0)"),
    clamp_to(0, MAX_OFFSET),
]
SearchLimit = Annotated[
    int,
    Field(ge=1, le=SEARCH_MAX_LIMIT, description="Results per page, 1-100 (clamped)"),
    clamp_to(1, SEARCH_MAX_LIMIT),
]
RecordLimit = Annotated[
    int,
    Field(ge=1, le=PAGE_MAX_LIMIT, description="Maximum records, 1-500 (clamped)"),
    clamp_to(1, PAGE_MAX_LIMIT),
]
RecordOffset = Annotated[
    int,
    Field(ge=0, le=MAX_OFFSET, description="Records to skip, for pagination (negative -> 0)"),
    clamp_to(0, MAX_OFFSET),
]
HistoryLimit = Annotated[
    int,
    Field(ge=1, le=HISTORY_MAX_LIMIT, description="Maximum results, 1-100 (clamped)"),
    clamp_to(1, HISTORY_MAX_LIMIT),
]
NeighborLimit = Annotated[
    int, Field(ge=1, le=100, description="Neighbours listed, 1-100"), clamp_to(1, 100)
]
TaggedLimit = Annotated[
    int, Field(ge=1, le=100, description="Notes listed, 1-100"), clamp_to(1, 100)
]
HubLimit = Annotated[int, Field(ge=1, le=50, description="Notes listed, 1-50"), clamp_to(1, 50)]
LinksLimit = Annotated[
    int, Field(ge=1, le=500, description="Most links listed each way, 1-500"), clamp_to(1, 500)
]
SimilarLimit = Annotated[
    int, Field(ge=1, le=50, description="Notes listed, 1-50 (clamped)"), clamp_to(1, 50)
]
GraphLimit = Annotated[
    int, Field(ge=1, le=5000, description="Most notes returned"), clamp_to(1, 5000)
]
ContentOffset = Annotated[
    int,
    Field(ge=0, le=MAX_OFFSET, description="Characters to skip, to read a long note on"),
    clamp_to(0, MAX_OFFSET),
]
ContentLength = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_CONTENT_CHARS,
        description="Most characters returned, 1-100,000 (a page also stays within ~20,000 tokens)",
    ),
    clamp_to(1, MAX_CONTENT_CHARS),
]

# ---------------------------------------------------------------- filters and paths

# An optional text filter; the tools give each its own description.
Filter = Annotated[str | None, BeforeValidator(_blank_to_none)]
Directory = Annotated[
    Filter, Field(description="Folder relative to the vault root, with its subfolders")
]
Tag = Annotated[Filter, Field(description="Tag, '#' optional; nested tags match")]
Relation = Annotated[
    Filter,
    Field(description="Only links of this type: `rel:: [[X]]`, `[[rel::X]]` or a frontmatter key"),
]
TagList = Annotated[list[str], Field(min_length=1, max_length=20, description="Tags, '#' optional")]
NotePath = Annotated[
    str,
    Field(description="Note path relative to the vault root, e.g. 'technical/fastapi.md'"),
]
Direction = Annotated[
    Literal["outgoing", "incoming", "both"],
    Field(description="outgoing: what the note links to; incoming: its backlinks; both"),
    BeforeValidator(_lower),
]
# A moment, in the unit of every timestamp Weaver returns, or as a person writes a date.
Time = Annotated[
    int | None,
    Field(ge=0, le=MAX_TIME),
    BeforeValidator(_epoch_ms),
    WithJsonSchema({"type": ["integer", "string", "null"]}),
]


def normalize_path(path: str) -> str:
    """A client's path in the cache's spelling: `/technical/`, `./technical`, `technical\\sub`
    -> `technical`, `technical/sub`; the vault root (`""`, `/`, `.`) -> `""`."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


def normalize_directory(directory: str | None) -> str | None:
    """A folder filter in the cache's spelling; the vault root -> None, i.e. no filter."""
    return None if directory is None else normalize_path(directory) or None


def tag_key(tag: str) -> str:
    """The key a tag is stored under: no surrounding space or leading '#', case-folded."""
    return normalize_tag(tag.strip().lstrip("#"))


def filter_tag(tag: str | None) -> str | None:
    """A tag filter's key (None: no filter); a tag with nothing in it is an argument error."""
    if tag is None:
        return None
    key = tag_key(tag)
    if not key:
        raise ArgumentError("tag", f"{tag!r} is not a tag")
    return key


def has_more(offset: int, shown: int, total: int) -> bool:
    """Whether a page of `shown` items from `offset` on leaves some of `total` after it."""
    return offset + shown < total
