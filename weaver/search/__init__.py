"""The one search over the notes: `search_notes`, `weaver search` and the dashboard render it.

`find_notes(sources, request)` chooses the mode (keyword, semantic, hybrid; by default hybrid
once every note is embedded), applies the folder and tag filters, ranks a note named exactly
what was searched for first, and returns one `SearchResults` page of `NoteHit`s. It is given
what it reads (`SearchSources`), never the App, so it sits above `semantic` and `views` and
below every edge.
"""

from __future__ import annotations

from weaver.search.core import find_notes, list_hits
from weaver.search.modes import choose_mode
from weaver.search.results import (
    NoteHit,
    SearchMode,
    SearchRequest,
    SearchResults,
    SearchSources,
)

__all__ = [
    "NoteHit",
    "SearchMode",
    "SearchRequest",
    "SearchResults",
    "SearchSources",
    "choose_mode",
    "find_notes",
    "list_hits",
]
