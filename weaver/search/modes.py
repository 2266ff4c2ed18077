"""Which mode a search runs in when none is asked for."""

from __future__ import annotations

from sqlalchemy import Connection

from weaver.errors import SemanticUnavailableError
from weaver.search.results import SearchMode, SearchSources
from weaver.semantic.model import semantic_installed


def choose_mode(sources: SearchSources, conn: Connection, asked: SearchMode | None) -> SearchMode:
    """The mode asked for; by default hybrid once the vectors cover the vault, else keyword
    (also when semantic search is off, not installed, or its model cannot load)."""
    if asked is not None:
        return asked
    if not (sources.semantic_enabled and semantic_installed()):
        return "keyword"
    if not sources.semantic.coverage(conn).complete:
        return "keyword"
    try:
        sources.semantic.model()
    except SemanticUnavailableError:
        return "keyword"
    return "hybrid"
