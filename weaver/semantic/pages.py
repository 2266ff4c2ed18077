"""A page of search results by meaning, as the tools, the CLI and the dashboard show it: which
mode a search runs in by default, and the semantic or hybrid page with each note's title, tags
and time. Every page says how much of the vault the vectors cover."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from sqlalchemy import Connection

from weaver.cache import read, vectors
from weaver.errors import SemanticUnavailableError
from weaver.semantic.model import semantic_installed
from weaver.semantic.search import SemanticPage, describe_coverage

if TYPE_CHECKING:
    from weaver.runtime.app import App

SearchMode = Literal["keyword", "semantic", "hybrid"]


def choose_mode(app: App, conn: Connection, asked: SearchMode | None) -> SearchMode:
    """The mode asked for; by default hybrid once the vectors cover the vault, else keyword
    (also when semantic search is off, not installed, or its model cannot load)."""
    if asked is not None:
        return asked
    if not (app.settings.semantic and semantic_installed()):
        return "keyword"
    if not app.semantic.coverage(conn).complete:
        return "keyword"
    try:
        app.semantic.model()
    except SemanticUnavailableError:
        return "keyword"
    return "hybrid"


@dataclass(frozen=True, slots=True)
class MeaningHit:
    path: str
    title: str
    snippet: str
    score: float
    tags: tuple[str, ...]
    modified: int


@dataclass(frozen=True, slots=True)
class MeaningPage:
    hits: list[MeaningHit]
    total: int
    coverage: str
    complete: bool  # every note embedded: the page covers the whole vault


def search_by_meaning(
    app: App,
    conn: Connection,
    query: str,
    mode: Literal["semantic", "hybrid"],
    limit: int,
    offset: int,
    directory: str | None,
    tag: str | None,
) -> MeaningPage:
    """A page of `search_notes` in semantic or hybrid mode."""
    run = app.semantic.search if mode == "semantic" else app.semantic.hybrid
    page = run(conn, query, limit, offset, directory=directory, tag=tag)
    return list_page(conn, page)


def list_page(conn: Connection, page: SemanticPage) -> MeaningPage:
    """A page of vector hits with each note's title, tags and time."""
    paths = [hit.path for hit in page.hits]
    listing = vectors.note_listing(conn, paths)
    tags = read.tags_of(conn, paths)
    hits = [
        MeaningHit(
            path=hit.path,
            title=listing[hit.path][0],
            snippet=hit.snippet,
            score=hit.score,
            tags=tags.get(hit.path, ()),
            modified=listing[hit.path][1],
        )
        for hit in page.hits
        if hit.path in listing  # a note deleted since its vectors were loaded
    ]
    return MeaningPage(hits, page.total, describe_coverage(page.coverage), page.coverage.complete)
