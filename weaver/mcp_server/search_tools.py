"""`search_notes`: full-text search over the notes' titles and bodies (SQLite FTS5, BM25).

A thin edge over `weaver.cache.fts`: the user's text becomes a safe FTS5 expression there
(`fts_query`), and the folder and tag filters are the ones `query_files` applies.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field
from sqlalchemy import Connection

from weaver.cache import fts, read
from weaver.mcp_server import hints
from weaver.mcp_server.arguments import (
    Directory,
    Offset,
    SearchLimit,
    Tag,
    filter_tag,
    normalize_directory,
)
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.envelope import answer
from weaver.mcp_server.schemas import Envelope, WireModel
from weaver.runtime.state import ServerState
from weaver.semantic.pages import SearchMode, choose_mode, search_by_meaning

MAX_NAME = 200  # longer text is no note's name


class SearchHitInfo(WireModel):
    path: str
    title: str
    snippet: str = Field(
        description="The best passage of the body, matches wrapped in <mark>…</mark>"
    )
    score: float = Field(
        description="BM25 relevance (higher is better); title and name words weigh 8-10x"
    )
    tags: list[str]
    modified: int = Field(description="Unix epoch milliseconds")


# The answer repeats the query so that a model sees what was searched; a pasted page of text
# as the query must not come back whole (it would take the answer over its token bound).
ECHO_CHARS = 500


def echo(text: str) -> str:
    """`text` as the answer repeats it: whole when short, else its start and its length."""
    if len(text) <= ECHO_CHARS:
        return text
    return f"{text[:ECHO_CHARS]}… ({len(text):,} characters in all)"


class SearchNotesData(WireModel):
    query: str = Field(description="The query searched for (its start, when very long)")
    fts_query: str | None = Field(
        description="The FTS5 expression searched for (its start, when very long), or null "
        "when the query held no words"
    )
    results: list[SearchHitInfo]
    total: int = Field(description="Notes matching, over all pages")
    limit: int
    offset: int
    has_more: bool
    mode: SearchMode = Field(default="keyword", description="The mode that answered")
    coverage: str | None = Field(
        default=None, description="Semantic and hybrid modes: how much of the vault has vectors"
    )


SEARCH_NOTES = """Search the text of the notes: titles, names, headings and bodies, ranked by
relevance (BM25: a word of the title or of another name of the note, its file name, an alias,
its first heading, counts eight to ten times one of the body, a heading's three times; a note
named exactly what was searched for comes first), each result with a highlighted snippet.

Any text is a valid query. Words must all appear (in any order; case, accents and word endings
are ignored: 'running' finds 'run'); Chinese or Japanese text is found wherever its characters
stand, spaces or not. Use "double quotes" for an exact phrase, word* for a
prefix, an upper-case OR between words for either, and -word or NOT word to exclude; every other
character is plain text. `directory` limits to a folder and its subfolders; `tag` to notes with
that tag or one nested below it ('#' and case ignored). Returns `results` (path, title, snippet
with <mark>…</mark> around matches, score, tags, modified in Unix epoch milliseconds), `total`,
`hasMore`, and `ftsQuery`, the expression actually run. Use query_files or search_tags to filter
by metadata only, get_file_content to read a hit.
`mode`: "keyword" is the text search above; "semantic" finds notes by meaning (a question or a
paraphrase finds a note written in other words; the snippet is the closest passage, the score
a cosine 0-1); "hybrid" fuses both rankings. Left out, it is hybrid once every note has been
embedded, keyword otherwise; `mode` and `coverage` in the answer say which ran and how much of
the vault the vectors cover. Example:
{"query": "\\"graph topology\\" neural*", "directory": "concepts", "limit": 10}."""


def named(state: ServerState, conn: Connection, query: str) -> list[str]:
    """The notes named exactly `query` (title, file name, alias or path, ignoring case): they
    rank first when they match it."""
    words = " ".join(query.replace('"', " ").split())
    if not words or len(words) > MAX_NAME:
        return []
    (match,) = state.name_index.get(conn).resolve([words], "exact")
    return [match.path, *match.alternatives] if match.path else []


@tool("Full-text search", SEARCH_NOTES, toolset="search")
async def search_notes(
    state: ServerState,
    query: Annotated[str, Field(description='Words, "phrases", prefix*, OR, -exclusions')],
    limit: SearchLimit = 20,
    offset: Offset = 0,
    directory: Directory = None,
    tag: Tag = None,
    mode: Annotated[
        SearchMode | None,
        Field(description="keyword | semantic | hybrid; default hybrid once embedded"),
    ] = None,
) -> Annotated[CallToolResult, Envelope[SearchNotesData]]:
    app = state.app

    def work() -> SearchNotesData:
        # One snapshot for the mode, the page and its tags: on PostgreSQL each is a
        # connection's transaction (and round trips) of its own.
        with read.read_snapshot(app.db) as conn:
            chosen = choose_mode(app, conn, mode)
            if chosen == "keyword":
                return by_keyword(conn)
            return by_meaning(conn, chosen)

    def by_keyword(conn: Connection) -> SearchNotesData:
        expression = fts.fts_query(query)
        hits: list[SearchHitInfo] = []
        total = 0
        if expression is not None:
            folder = normalize_directory(directory)
            page = fts.search(
                conn,
                expression,
                limit,
                offset,
                directory=folder,
                tag=filter_tag(tag),
                pinned=named(state, conn, query),
            )
            if page.total == 0:
                hints.check_folder(state, conn, folder)
            tags = read.tags_of(conn, [h.path for h in page.hits])
            total = page.total
            hits = [
                SearchHitInfo(
                    path=h.path,
                    title=h.title,
                    snippet=h.snippet,
                    score=h.score,
                    tags=list(tags.get(h.path, ())),
                    modified=h.modified,
                )
                for h in page.hits
            ]
        return SearchNotesData(
            query=echo(query),
            fts_query=None if expression is None else echo(fts.unsegment(expression)),
            results=hits,
            total=total,
            limit=limit,
            offset=offset,
            has_more=offset + len(hits) < total,
        )

    def by_meaning(conn: Connection, chosen: Literal["semantic", "hybrid"]) -> SearchNotesData:
        folder = normalize_directory(directory)
        page = search_by_meaning(app, conn, query, chosen, limit, offset, folder, filter_tag(tag))
        hits = [SearchHitInfo(**{**asdict(h), "tags": list(h.tags)}) for h in page.hits]
        return SearchNotesData(
            query=echo(query),
            fts_query=None,
            results=hits,
            total=page.total,
            limit=limit,
            offset=offset,
            has_more=offset + len(hits) < page.total,
            mode=chosen,
            coverage=page.coverage,
        )

    return await answer(state, work)
