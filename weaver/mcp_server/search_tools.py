"""`search_notes`: full-text search over the notes' titles and bodies (SQLite FTS5, BM25).

A thin edge over `weaver.search`, whose page `weaver search` and the dashboard show too; the
folder and tag filters are the ones `query_files` applies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, TypeVar

from pydantic import Field

from weaver.cache import read
from weaver.cache.attachment_text import PageHit
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
from weaver.mcp_server.schemas import WireModel
from weaver.runtime.state import ServerState
from weaver.search import SearchMode, SearchRequest, SearchResults, find_notes
from weaver.search.results import NoteHit


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


class PdfPageHitInfo(WireModel):
    """A PDF attachment (not a note) at the page matching best."""

    path: str = Field(description="The PDF's path in the vault")
    page: int = Field(description="The page (from 1) matching best")
    snippet: str = Field(description="The passage of the page, matches wrapped in <mark>…</mark>")
    score: float = Field(description="BM25 relevance among PDFs (higher is better)")
    read_with: str = Field(description="The call that reads this page's text")


def _page_hit(hit: PageHit) -> PdfPageHitInfo:
    return PdfPageHitInfo(
        path=hit.path,
        page=hit.page,
        snippet=hit.snippet,
        score=hit.score,
        read_with=_read_with(hit),
    )


def _read_with(hit: PageHit, vault: str | None = None) -> str:
    """The get_attachment call reading `hit`'s page (in `vault`, on a server of several)."""
    arguments: dict[str, object] = {"path": hit.path, "page": hit.page}
    if vault is not None:
        arguments["vault"] = vault
    return f"get_attachment {json.dumps(arguments, ensure_ascii=False)}"


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
    total_exact: bool = Field(
        default=True, description="False when `total` is an estimate (at most that many)"
    )
    limit: int
    offset: int
    has_more: bool
    mode: SearchMode = Field(default="keyword", description="The mode that answered")
    coverage: str | None = Field(
        default=None, description="Semantic and hybrid modes: how much of the vault has vectors"
    )
    progress: str | None = Field(
        default=None,
        description="While semantic search is not ready: how far the model's build or the "
        "notes' embedding is",
    )
    attachments: list[PdfPageHitInfo] = Field(
        default_factory=list,
        description="PDFs matching as the notes do (by words, meaning or both), best first, "
        "each at its best page; paged by the same offset and limit",
    )
    attachment_total: int = Field(default=0, description="PDFs matching, over all pages")
    attachment_text: str | None = Field(
        default=None, description="Why PDF text is not searched here, when it is not"
    )


SEARCH_NOTES = """Full-text search over titles, names, headings and bodies, ranked, with snippets;
semantic or hybrid when notes are embedded. Use it to find notes about something.

Search the text of the notes: titles, names, headings and bodies, ranked by
relevance (BM25: a word of the title or of another name of the note, its file name, an alias,
its first heading, counts eight to ten times one of the body, a heading's three times; a note
named exactly what was searched for comes first), each result with a highlighted snippet.

Any text is a valid query. Words must all appear (in any order; case, accents and word endings
are ignored: 'running' finds 'run'); Chinese or Japanese text is found wherever its characters
stand, spaces or not, an unquoted run split into two-character words (notes holding more of
them first). Use "double quotes" for an exact phrase, word* for a prefix, an upper-case OR
between words for either, and -word or NOT word to exclude; every other character is plain
text. `directory` limits to a folder and its subfolders; `tag` to notes with
that tag or one nested below it ('#' and case ignored). Returns `results` (path, title, snippet
with <mark>…</mark> around matches, score, tags, modified in Unix epoch milliseconds), `total`,
`hasMore`, and `ftsQuery`, the expression actually run. Use query_files or search_tags to filter
by metadata only, get_file_content to read a hit.
`mode`: "keyword" is the text search above; "semantic" finds notes by meaning (a question or a
paraphrase finds a note written in other words; the snippet is the closest passage, the score
a cosine 0-1); "hybrid" fuses both rankings, a note joining by meaning only when close
enough (`totalExact` false: `total` is an upper bound). Left out, it is hybrid once every note
has been embedded, keyword otherwise; `mode` and `coverage` in the answer say which ran and
how much of the vault the vectors cover.
PDFs' text is searched too, in the same mode (no OCR): each matching PDF comes in `attachments` at
its best page (`path`, `page`, snippet, `readWith`: the call reading it), `attachmentTotal`
counting them; `offset` pages both lists; `tag` leaves PDFs out. Example:
{"query": "\\"graph topology\\" neural*", "directory": "concepts", "limit": 10}."""


# The arguments search_notes takes in one vault and in every vault at once.
SearchQuery = Annotated[str, Field(description='Words, "phrases", prefix*, OR, -exclusions')]
SearchModeChoice = Annotated[
    SearchMode | None,
    Field(description="keyword | semantic | hybrid; default hybrid once embedded"),
]


@tool("Full-text search", SEARCH_NOTES, toolset="search", rate_class="search")
def search_notes(
    state: ServerState,
    query: SearchQuery,
    limit: SearchLimit = 20,
    offset: Offset = 0,
    directory: Directory = None,
    tag: Tag = None,
    mode: SearchModeChoice = None,
) -> SearchNotesData:
    app = state.app
    request = SearchRequest(
        query, mode, normalize_directory(directory), filter_tag(tag), limit, offset
    )
    sources = state.search_sources
    found = find_notes(sources, request)
    if found.fts_query is not None and found.total == 0 and request.directory:
        with read.read_snapshot(app.db) as conn:
            hints.check_folder(state, conn, request.directory)
    return SearchNotesData(
        query=echo(query),
        fts_query=None if found.fts_query is None else echo(found.fts_query),
        results=[SearchHitInfo.model_validate(h) for h in found.hits],
        total=found.total,
        total_exact=found.total_exact,
        limit=limit,
        offset=offset,
        has_more=found.has_more,
        mode=found.mode,
        coverage=found.coverage,
        progress=found.progress,
        attachments=[_page_hit(h) for h in found.attachment_hits],
        attachment_total=found.attachment_total,
        attachment_text=found.attachment_text,
    )


class VaultSearchHitInfo(SearchHitInfo):
    vault: str = Field(description="The vault holding the note")


class VaultPdfPageHitInfo(PdfPageHitInfo):
    vault: str = Field(description="The vault holding the PDF (`readWith` names it)")


class VaultSearchNotesData(SearchNotesData):
    """search_notes over every vault (`vault: "*"`): the vaults' notes merged by score, and
    apart from them their PDFs, merged the same way."""

    results: list[VaultSearchHitInfo]  # type: ignore[assignment]
    attachments: list[VaultPdfPageHitInfo] = Field(  # type: ignore[assignment]
        default_factory=list,
        description="PDFs matching as the notes do (by words, meaning or both) in every vault, "
        "best first, each at its best page and naming its vault; paged by the same offset and "
        "limit",
    )


def search_every_vault(
    states: Mapping[str, ServerState],
    query: SearchQuery,
    limit: SearchLimit = 20,
    offset: Offset = 0,
    directory: Directory = None,
    tag: Tag = None,
    mode: SearchModeChoice = None,
) -> VaultSearchNotesData:
    """search_notes in every vault at once: each vault's first `offset + limit` hits, merged
    best score first, the page cut from the merge (so that paging through it sees each hit
    once); their PDF hits likewise, apart from the notes. A vault answers in its own default
    mode when `mode` is left out: the answer's `mode` is the first vault's."""
    request = SearchRequest(
        query, mode, normalize_directory(directory), filter_tag(tag), offset + limit, 0
    )
    found = {name: find_notes(state.search_sources, request) for name, state in states.items()}
    page = _merged({name: each.hits for name, each in found.items()})[offset : offset + limit]
    pdfs = _merged({name: each.attachment_hits for name, each in found.items()})
    first = next(iter(found.values()))
    total = sum(each.total for each in found.values())
    attachment_total = sum(each.attachment_total for each in found.values())
    return VaultSearchNotesData(
        query=echo(query),
        fts_query=None if first.fts_query is None else echo(first.fts_query),
        results=[
            VaultSearchHitInfo.model_validate({**_hit_fields(hit), "vault": name})
            for _, name, hit in page
        ],
        total=total,
        total_exact=all(each.total_exact for each in found.values()),
        limit=limit,
        offset=offset,
        has_more=offset + limit < total
        or any(len(each.hits) < each.total for each in found.values())
        or offset + limit < attachment_total,
        mode=first.mode,
        coverage=_joined(found, "coverage"),
        progress=_joined(found, "progress"),
        attachments=[_vault_page_hit(hit, name) for _, name, hit in pdfs[offset : offset + limit]],
        attachment_total=attachment_total,
        attachment_text=_joined(found, "attachment_text"),
    )


Hit = TypeVar("Hit", NoteHit, PageHit)


def _merged(hits: Mapping[str, Sequence[Hit]]) -> list[tuple[float, str, Hit]]:
    """Every vault's hits, best score first (a tie in the vaults' order, then each's own)."""
    return sorted(
        ((hit.score, name, hit) for name, each in hits.items() for hit in each),
        key=lambda scored: -scored[0],
    )


def _vault_page_hit(hit: PageHit, vault: str) -> VaultPdfPageHitInfo:
    return VaultPdfPageHitInfo(
        path=hit.path,
        page=hit.page,
        snippet=hit.snippet,
        score=hit.score,
        read_with=_read_with(hit, vault),
        vault=vault,
    )


def _hit_fields(hit: object) -> dict[str, object]:
    return SearchHitInfo.model_validate(hit).model_dump()


def _joined(found: Mapping[str, SearchResults], field: str) -> str | None:
    """Each vault's `coverage` (or `progress`), named by vault; None when none says any."""
    said = [
        f"{name}: {getattr(each, field)}" for name, each in found.items() if getattr(each, field)
    ]
    return "; ".join(said) or None
