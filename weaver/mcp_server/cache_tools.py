"""The shadow-cache tools: query_files, get_file, get_file_content, search_tags, search_links,
get_stats. Thin edges over `weaver.cache.read` (and `Vault` for file content)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from weaver.cache import graph as cache_graph
from weaver.cache import read
from weaver.cache.read import FileFilters, FileOrder, SortField
from weaver.errors import NoteNotFoundError
from weaver.mcp_server import hints
from weaver.mcp_server.arguments import (
    DEFAULT_CONTENT_CHARS,
    ContentLength,
    ContentOffset,
    Direction,
    Directory,
    Filter,
    Limit,
    LinksLimit,
    NotePath,
    Offset,
    Tag,
    Time,
    filter_tag,
    normalize_directory,
    tag_key,
)
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.content import backlink_context, read_page
from weaver.mcp_server.envelope import ArgumentError
from weaver.mcp_server.schemas import (
    INLINE_FIELDS_SHOWN,
    FileContentData,
    FileData,
    FileInfo,
    FileLinks,
    InlineFieldData,
    LinkCounts,
    QueryFilesData,
    SearchLinksData,
    SearchTagsData,
    StatsData,
    TagCountInfo,
    TaggedFile,
)
from weaver.mcp_server.where import parse_where
from weaver.paging import has_more
from weaver.runtime.state import ServerState
from weaver.semantic.search import embedding_status

# get_file's links each way: enough to see a note's neighbourhood; a hub's thousands of
# backlinks are search_links' to page through.
DEFAULT_LINKS = 50


def links_hint(path: str, detail: read.FileDetail, limit: int) -> str | None:
    """How to list the links `limit` left out, or None when it left none out."""
    cut = [
        side
        for side, total in (
            ("outgoing", detail.outgoing_total),
            ("incoming", detail.incoming_total),
        )
        if total > limit
    ]
    if not cut:
        return None
    direction = cut[0] if len(cut) == 1 else "both"
    return (
        f"{' and '.join(cut)} links cut at {limit}: call search_links with "
        f'{{"path": "{path}", "direction": "{direction}", "offset": {limit}}} for the rest, '
        "or get_file with a larger linksLimit (up to 500)"
    )


QUERY_FILES = """List notes filtered by folder, tag, type, status, modified dates or any
frontmatter property (`where`), paged. Use it to browse or find notes by metadata, or to see what
changed recently.

Returns `files` (path, title, type, status, frontmatter, tags, created, modified, size), with
`total` matching notes, the `limit`/`offset` applied and `hasMore`. Results are ordered by path,
or with `sortBy` "modified" or "created" newest first (ties by path), so pages are stable.
Filters combine with AND: `directory` matches that folder and its subfolders ("Folder not
found" when there is no such folder); `type`/`status` match the frontmatter values exactly;
`tag` ignores case and a leading '#', and also matches nested tags ('project' matches
'project/alpha'); `modifiedSince` (inclusive) and `modifiedUntil` (exclusive) take Unix epoch
milliseconds or an ISO date ('2026-11-20', local time). `where` tests any frontmatter property
or Dataview inline field (`key:: value`; the frontmatter wins a clash), names ignoring case: a
value for equality (text, number, true/false), a list for any of them, or operators: eq, in,
lt, lte, gt, gte (numbers, or text such as ISO dates), contains (an element of a list property),
exists (true/false). Timestamps are Unix epoch milliseconds. Use it to
browse or find notes by metadata, or to see what changed recently; use
get_file_content to read one. Examples:
{"directory": "technical", "type": "concept", "limit": 20};
{"sortBy": "modified", "modifiedSince": "2026-11-20", "limit": 10};
{"where": {"priority": 1, "due": {"lt": "2026-12-01"}}}."""

GET_FILE = """One note's metadata from the cache: title, frontmatter, tags, aliases, dates,
contentHash and its links both ways. Use it to inspect a note without reading its text.

Returns path, title (the frontmatter title, else the file name, as Obsidian shows it), heading
(the first H1), type, status, frontmatter, tags, aliases, created, modified (Unix epoch
milliseconds), size in bytes, contentHash (sha256 of the file: update_file's expectedHash),
`error` (why the note's metadata could not be read, e.g. frontmatter that does not parse; null
when none), `inlineFields` (Dataview `key:: value` fields: key, value, 1-based line; the first
100, `inlineFieldsTotal` counts them; `where=` matches them unless the frontmatter has the key),
and `links`: `outgoing` (distinct targets in order of appearance: the resolved
file path, or the raw link text when no file matches), `broken` (the listed outgoing targets
that match no file) and `incoming` (paths of notes linking here, sorted). Each list holds at
most `linksLimit` (default 50, up to 500) entries; `outgoingTotal`, `incomingTotal` and
`brokenTotal` count them all, and `hint` says how to page through the rest with search_links.
Use it to inspect a note and its neighbourhood without reading the whole text. Fails with
"File not found" or "Invalid path". Example: {"path": "concepts/graph-topology.md"}."""

GET_FILE_CONTENT = """Read a note's markdown text, whole or in pages, or one section (by heading or
^block id). Use it to read a note; get_files_content reads several.

Returns path, content (frontmatter included), size in bytes and encoding ("utf-8"). A note
comes in pages of at most `length` characters (default 40,000, up to 100,000) and at most
~20,000 tokens (fewer characters for Chinese or Japanese text): `truncated` is true and
`nextOffset` the `offset` that reads on; `totalLength` is the whole text's length in
characters. `section` reads one part only: a heading's section by its heading ("Setup"), or by
a heading path ("Setup::Linux", the heading Linux under Setup), or a block by its id
("^intro"); offsets then count within it. Only markdown notes inside the vault are served:
paths with '..', absolute paths, hidden or ignored folders (.obsidian, .weaver, ...), symlinks
leading outside the vault and non-.md files fail with "Invalid path"; a file that is not
UTF-8 fails with a clear error. Use it when you need the text itself; use get_file for
metadata and links. Examples: {"path": "technical/fastapi.md"};
{"path": "guide.md", "section": "Setup::Linux"}."""

SEARCH_TAGS = """Notes carrying a tag (nested tags and * wildcards included), by path. Use it to
list what is filed under a tag.

The tag ignores case and a leading '#', matches nested tags ('project' finds 'project/alpha'),
and accepts wildcards: '*' for any characters, '?' for one ('proj*', '*/alpha'). Returns
`files` (path, title, type, status, frontmatter, tags, modified in Unix epoch milliseconds),
`count` of all matching notes even beyond `limit`, `hasMore` (pass `offset` for the next
page), and `matchedTags` (the distinct tags that matched). Example: {"tag": "neural", "limit":
50}."""

SEARCH_LINKS = """What a note links to and what links to it (backlinks), optionally with the
linking lines. Use it to page through a note's links.

Returns `outgoing` (distinct targets, sorted: resolved paths, or the raw link text for broken
links, which are also listed in `broken`), `incoming` (distinct notes linking here, sorted) and
`count` totals for the requested direction(s), which stay exact when `limit` shortens the
lists; the side not requested is empty with count 0. Each side lists `limit` entries from
`offset` on; `hasMore` says whether either side goes on. With `context`, each listed backlink
comes with the lines on which it links here (`context`: path, lines of {line, text}), as
Obsidian's backlinks pane shows them. Use it to walk the note graph. Fails with "File not
found" when the note is not in the cache. Example:
{"path": "technical/fastapi.md", "direction": "incoming", "offset": 100, "context": true}."""

GET_STATS = """An overview of the vault: notes, attachments, tags, links, broken links, types,
statuses, top tags. Start here.

Returns totalFiles (notes), totalAttachments, filesWithErrors, totalTags (distinct),
totalLinks (link occurrences, embeds included), brokenLinks, filesByType, filesByStatus,
topTags (the 10 most used, with counts), vaultSize in bytes and lastUpdated (when the cache
last changed, Unix epoch milliseconds). Use it first to get a feel for a vault. Example: {}."""


@tool("Query notes", QUERY_FILES, toolset="notes")
def query_files(
    state: ServerState,
    directory: Directory = None,
    type: Annotated[Filter, Field(description="Frontmatter `type`, e.g. 'concept'")] = None,
    status: Annotated[Filter, Field(description="Frontmatter `status`, e.g. 'active'")] = None,
    tag: Tag = None,
    limit: Limit = 50,
    offset: Offset = 0,
    sortBy: Annotated[
        SortField, Field(description="Order by path, or by time modified or created")
    ] = "path",
    sortOrder: Annotated[
        Literal["asc", "desc"] | None,
        Field(description="Default: asc for path, desc (newest first) for the times"),
    ] = None,
    modifiedSince: Annotated[
        Time, Field(description="Modified at or after (epoch ms, or ISO date or date-time)")
    ] = None,
    modifiedUntil: Annotated[
        Time, Field(description="Modified before (epoch ms, or ISO date or date-time)")
    ] = None,
    where: Annotated[
        dict[str, Any] | None,
        Field(
            description="Frontmatter property tests, all of which must hold: "
            '{"priority": 1, "status": ["a", "b"], "due": {"lt": "2026-12-01"}, '
            '"tags": {"contains": "x"}, "cover": {"exists": false}}'
        ),
    ] = None,
) -> QueryFilesData:
    filters = FileFilters(
        normalize_directory(directory),
        type,
        status,
        filter_tag(tag),
        modified_since=modifiedSince,
        modified_until=modifiedUntil,
        where=parse_where(where),
    )
    descending = sortOrder == "desc" if sortOrder else sortBy != "path"
    with read.read_snapshot(state.app.db) as conn:
        page = read.query_files(conn, filters, limit, offset, FileOrder(sortBy, descending))
        if page.total == 0:
            hints.check_folder(state, conn, filters.directory)
    return QueryFilesData(
        files=[FileInfo.model_validate(f) for f in page.items],
        total=page.total,
        limit=page.limit,
        offset=page.offset,
        has_more=page.has_more,
    )


@tool("Get note metadata", GET_FILE, toolset="notes")
def get_file(
    state: ServerState, path: NotePath, linksLimit: LinksLimit = DEFAULT_LINKS
) -> FileData:
    app = state.app
    clean = app.vault.check_note_path(path)
    with read.read_snapshot(app.db) as conn:
        detail = read.get_file(conn, clean, linksLimit)
    if detail is None:
        raise NoteNotFoundError(clean)
    info = FileInfo.model_validate(detail.summary)
    links = FileLinks(
        outgoing=[t.target for t in detail.outgoing],
        incoming=detail.incoming,
        broken=[t.target for t in detail.outgoing if t.broken],
        outgoing_total=detail.outgoing_total,
        incoming_total=detail.incoming_total,
        broken_total=detail.broken_total,
        hint=links_hint(clean, detail, linksLimit),
    )
    return FileData(
        **dict(info),
        aliases=list(detail.aliases),
        links=links,
        content_hash=detail.content_hash,
        error=detail.error,
        heading=detail.heading,
        inline_fields=[
            InlineFieldData(key=f.key, value=f.value, line=f.line)
            for f in detail.inline_fields[:INLINE_FIELDS_SHOWN]
        ],
        inline_fields_total=len(detail.inline_fields),
    )


@tool("Read note content", GET_FILE_CONTENT, toolset="notes", cache_hit=False)
def get_file_content(
    state: ServerState,
    path: NotePath,
    offset: ContentOffset = 0,
    length: ContentLength = DEFAULT_CONTENT_CHARS,
    section: Annotated[
        Filter,
        Field(description="Only this part: 'Heading', 'Heading::Subheading' or '^blockid'"),
    ] = None,
) -> FileContentData:
    clean = state.app.vault.check_note_path(path)
    return read_page(state.app.vault, clean, offset, length, section)


@tool("Search by tag", SEARCH_TAGS, toolset="tags")
def search_tags(
    state: ServerState,
    tag: Annotated[str, Field(description="Tag to find, e.g. 'project' or '#proj*'")],
    limit: Limit = 100,
    offset: Offset = 0,
) -> SearchTagsData:
    key = tag_key(tag)
    if not key.strip("*?"):
        raise ArgumentError("tag", f"{tag!r} is not a tag")
    with read.read_snapshot(state.app.db) as conn:
        found = cache_graph.search_tags(conn, state.tag_index, key, limit, offset)
        hint = hints.tag_hint(conn, [key]) if found.total == 0 else None
    return SearchTagsData(
        tag=key,
        files=[TaggedFile.model_validate(f) for f in found.files],
        count=found.total,
        limit=limit,
        offset=offset,
        has_more=has_more(offset, len(found.files), found.total),
        matched_tags=found.matched_tags,
        hint=hint,
    )


@tool("Search links", SEARCH_LINKS, toolset="graph")
def search_links(
    state: ServerState,
    path: NotePath,
    direction: Direction = "both",
    limit: Limit = 100,
    offset: Offset = 0,
    context: Annotated[
        bool, Field(description="Add the lines on which each listed backlink links here")
    ] = False,
) -> SearchLinksData:
    app = state.app
    clean = app.vault.check_note_path(path)
    with read.read_snapshot(app.db) as conn:
        if not read.note_exists(conn, clean):
            raise NoteNotFoundError(clean)
        found = read.search_links(conn, clean, direction, limit, offset)
        lines = read.backlink_lines(conn, clean, found.incoming) if context else {}
    counts = LinkCounts(
        outgoing=found.outgoing_total,
        incoming=found.incoming_total,
        total=found.outgoing_total + found.incoming_total,
    )
    return SearchLinksData(
        path=clean,
        direction=direction,
        outgoing=[t.target for t in found.outgoing],
        incoming=found.incoming,
        broken=[t.target for t in found.outgoing if t.broken],
        count=counts,
        limit=limit,
        offset=offset,
        # Either side going on: the longer side's total against a full page.
        has_more=has_more(offset, limit, max(found.outgoing_total, found.incoming_total)),
        context=backlink_context(app.vault, lines, found.incoming) if context else None,
    )


@tool("Vault statistics", GET_STATS, toolset="notes")
def get_stats(state: ServerState) -> StatsData:
    app = state.app
    with read.read_snapshot(app.db) as conn:
        stats = state.stats.get(conn)
        embedding = embedding_status(app.semantic, conn, app.settings.semantic)
    return StatsData(
        total_files=stats.total_files,
        total_attachments=stats.total_attachments,
        files_with_errors=stats.files_with_errors,
        total_tags=stats.total_tags,
        total_links=stats.total_links,
        broken_links=stats.broken_links,
        files_by_type=stats.files_by_type,
        files_by_status=stats.files_by_status,
        top_tags=[TagCountInfo(tag=t.tag, count=t.count) for t in stats.top_tags],
        vault_size=stats.vault_size,
        last_updated=stats.last_updated,
        embedding=embedding,
    )
