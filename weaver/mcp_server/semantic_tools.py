"""Semantic search at the MCP edge: `search_notes`'s semantic and hybrid modes (called from
`search_tools`), `get_similar_notes`, and `resolve_names`'s semantic strategy (called from
`graph_tools`). Thin over `weaver.semantic.search`; every answer from vectors says how much of
the vault they cover, so a partial answer during a first embedding is never taken for whole.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Annotated

from pydantic import Field
from sqlalchemy import Connection

from weaver.cache import read, vectors
from weaver.errors import NoteNotFoundError
from weaver.mcp_server.arguments import NotePath, SimilarLimit
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.schemas import WireModel
from weaver.paging import has_more
from weaver.runtime.app import App
from weaver.runtime.state import ServerState
from weaver.search import list_hits
from weaver.semantic.search import describe_coverage
from weaver.views.names import NameMatch

# Candidates per name for the semantic strategy of resolve_names (the rest are alternatives).
_NAME_CANDIDATES = 4


def resolve_by_meaning(
    app: App,
    conn: Connection,
    names: Sequence[str],
    threshold: float,
    within: Collection[str] | None,
) -> list[NameMatch]:
    """`resolve_names` by meaning: each name's nearest note by cosine, if at least
    `threshold`; the next nearest are its alternatives."""
    matches = []
    for name in names:
        depth = _NAME_CANDIDATES if within is None else _NAME_CANDIDATES * 25
        page = app.semantic.search(conn, name, depth, 0)
        hits = [h for h in page.hits if within is None or h.path in within][:_NAME_CANDIDATES]
        kept = [h for h in hits if h.score >= threshold]
        if not kept:
            matches.append(NameMatch(name, None, None, None, None, 0.0, ()))
            continue
        best = kept[0]
        title = vectors.note_listing(conn, [best.path]).get(best.path, (best.path, 0))[0]
        others = tuple(h.path for h in kept[1:])
        matches.append(
            NameMatch(name, best.path, title, "meaning", best.snippet, best.score, others)
        )
    return matches


class SimilarNoteInfo(WireModel):
    path: str
    title: str
    score: float = Field(description="Cosine similarity to the note, 0-1 (higher is closer)")
    snippet: str = Field(description="The passage of this note closest to the other one")
    tags: list[str]
    linked: bool = Field(description="Whether the two notes already link to each other")


class SimilarNotesData(WireModel):
    path: str
    results: list[SimilarNoteInfo]
    total: int
    limit: int
    has_more: bool
    coverage: str = Field(description="How much of the vault has vectors so far")


GET_SIMILAR_NOTES = """Notes closest in meaning to a note. Use it to find what a note should link
to, or related reading.

`unlinkedOnly` true leaves out notes already linked to or from it ("unlinked but related": the
links worth adding). Returns `results` (path, title, score 0-1, snippet of the closest passage,
tags, linked), `total`, `hasMore`, and `coverage` ("embedded N of M notes": while partial, notes
not yet embedded cannot appear). Needs semantic search (the `semantic` extra).
Example: {"path": "concepts/graph.md", "limit": 10, "unlinkedOnly": true}."""


@tool("Similar notes", GET_SIMILAR_NOTES, toolset="search", rate_class="search")
def get_similar_notes(
    state: ServerState,
    path: NotePath,
    limit: SimilarLimit = 10,
    unlinkedOnly: Annotated[
        bool, Field(description="Leave out notes already linked to or from this one")
    ] = False,
) -> SimilarNotesData:
    app = state.app
    clean = app.vault.check_note_path(path)
    with read.read_snapshot(app.db) as conn:
        if not read.note_exists(conn, clean):
            raise NoteNotFoundError(clean)
        linked = vectors.linked_paths(conn, clean)
        page = app.semantic.similar(conn, clean, limit, linked if unlinkedOnly else ())
        listed = list_hits(conn, page)
    results = [
        SimilarNoteInfo(
            path=h.path,
            title=h.title,
            score=h.score,
            snippet=h.snippet,
            tags=list(h.tags),
            linked=h.path in linked,
        )
        for h in listed
    ]
    return SimilarNotesData(
        path=clean,
        results=results,
        total=page.total,
        limit=limit,
        has_more=has_more(0, len(results), page.total),
        coverage=describe_coverage(page.coverage),
    )
