"""The shadow-cache tools: query_files, get_file, get_file_content, search_tags, search_links,
get_stats. Thin edges over `weaver.cache.read` (and `Vault` for file content)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult
from pydantic import Field

from weaver.cache import graph as cache_graph
from weaver.cache import read
from weaver.cache.read import FileFilters, FileOrder, SortField
from weaver.errors import NoteDecodeError, NoteNotFoundError
from weaver.mcp_server import hints
from weaver.mcp_server.arguments import (
    MAX_CONTENT_CHARS,
    ContentLength,
    ContentOffset,
    Direction,
    Directory,
    Filter,
    Limit,
    NotePath,
    Offset,
    Tag,
    Time,
    filter_tag,
    normalize_directory,
    tag_key,
)
from weaver.mcp_server.envelope import ArgumentError, answer, make_tool
from weaver.mcp_server.schemas import (
    Envelope,
    FileContentData,
    FileData,
    FileInfo,
    FileLinks,
    LinkCounts,
    QueryFilesData,
    SearchLinksData,
    SearchTagsData,
    StatsData,
    TagCountInfo,
    TaggedFile,
)
from weaver.mcp_server.state import ServerState
from weaver.semantic.search import embedding_status

QueryFilesResult = Annotated[CallToolResult, Envelope[QueryFilesData]]
GetFileResult = Annotated[CallToolResult, Envelope[FileData]]
FileContentResult = Annotated[CallToolResult, Envelope[FileContentData]]
SearchTagsResult = Annotated[CallToolResult, Envelope[SearchTagsData]]
SearchLinksResult = Annotated[CallToolResult, Envelope[SearchLinksData]]
StatsResult = Annotated[CallToolResult, Envelope[StatsData]]


QUERY_FILES = """List notes of the vault from the shadow cache, filtered and paginated.

Returns `files` (path, title, type, status, frontmatter, tags, created, modified, size), with
`total` matching notes, the `limit`/`offset` applied and `hasMore`. Results are ordered by path,
or with `sortBy` "modified" or "created" newest first (ties by path), so pages are stable.
Filters combine with AND: `directory` matches that folder and its subfolders ("Folder not
found" when there is no such folder); `type`/`status` match the frontmatter values exactly;
`tag` ignores case and a leading '#', and also matches nested tags ('project' matches
'project/alpha'); `modifiedSince` (inclusive) and `modifiedUntil` (exclusive) take Unix epoch
milliseconds or an ISO date ('2026-11-20', local time). Timestamps are Unix epoch
milliseconds. Use it to browse or find notes by metadata, or to see what changed recently; use
get_file_content to read one. Examples:
{"directory": "technical", "type": "concept", "limit": 20};
{"sortBy": "modified", "modifiedSince": "2026-11-20", "limit": 10}."""

GET_FILE = """Get one note's metadata from the shadow cache, with its links.

Returns path, title, type, status, frontmatter, tags, aliases, created, modified (Unix epoch
milliseconds), size in bytes, contentHash (sha256 of the file: update_file's expectedHash), and
`links`: `outgoing` (distinct targets in order of appearance:
the resolved file path, or the raw link text when no file matches), `broken` (the outgoing
targets that match no file) and `incoming` (paths of notes linking here). Use it to inspect a
note and its neighbourhood without reading the whole text. Fails with "File not found" or
"Invalid path". Example: {"path": "concepts/graph-topology.md"}."""

GET_FILE_CONTENT = """Read a note's full markdown text from disk (not from the cache).

Returns path, content (frontmatter included), size in bytes and encoding ("utf-8"). A note
longer than `length` characters (default and most 1,000,000) comes in pages: `truncated` is
true and `nextOffset` the `offset` that reads on; `totalLength` is the whole note's length in
characters. Only
markdown notes inside the vault are served: paths with '..', absolute paths, hidden or ignored
folders (.obsidian, .weaver, ...), symlinks leading outside the vault and non-.md files fail with
"Invalid path"; a file that is not UTF-8 fails with a clear error. Use it when you need the
text itself; use get_file for metadata and links. Example: {"path": "technical/fastapi.md"}."""

SEARCH_TAGS = """Find the notes carrying a tag, ordered by path.

The tag ignores case and a leading '#', matches nested tags ('project' finds 'project/alpha'),
and accepts wildcards: '*' for any characters, '?' for one ('proj*', '*/alpha'). Returns
`files` (path, title, type, status, frontmatter, tags, modified in Unix epoch milliseconds),
`count` of all matching notes even beyond `limit`, `hasMore`, and `matchedTags` (the distinct
tags that matched). Example: {"tag": "neural", "limit": 50}."""

SEARCH_LINKS = """List the link neighbours of a note: what it links to and what links to it.

Returns `outgoing` (distinct targets, sorted: resolved paths, or the raw link text for broken
links, which are also listed in `broken`), `incoming` (distinct notes linking here, sorted) and
`count` totals for the requested direction(s), which stay exact when `limit` shortens the
lists; the side not requested is empty with count 0. Use it to walk the note graph. Fails with
"File not found" when the note is not in the cache. Example:
{"path": "technical/fastapi.md", "direction": "incoming"}."""

GET_STATS = """Summarise the whole vault from the shadow cache.

Returns totalFiles (notes), totalAttachments, filesWithErrors, totalTags (distinct),
totalLinks (link occurrences, embeds included), brokenLinks, filesByType, filesByStatus,
topTags (the 10 most used, with counts), vaultSize in bytes and lastUpdated (when the cache
last changed, Unix epoch milliseconds). Use it first to get a feel for a vault. Example: {}."""


def build_cache_tools(state: ServerState) -> list[Tool]:
    app = state.app

    async def query_files(
        directory: Directory = None,
        type: Annotated[Filter, Field(description="Frontmatter `type`, e.g. 'concept'")] = None,
        status: Annotated[Filter, Field(description="Frontmatter `status`, e.g. 'active'")] = None,
        tag: Tag = None,
        limit: Limit = 50,
        offset: Offset = 0,
        sortBy: Annotated[  # noqa: N803  (camelCase on the wire, as the contract's arguments)
            SortField, Field(description="Order by path, or by time modified or created")
        ] = "path",
        sortOrder: Annotated[  # noqa: N803
            Literal["asc", "desc"] | None,
            Field(description="Default: asc for path, desc (newest first) for the times"),
        ] = None,
        modifiedSince: Annotated[  # noqa: N803
            Time, Field(description="Modified at or after (epoch ms, or ISO date or date-time)")
        ] = None,
        modifiedUntil: Annotated[  # noqa: N803
            Time, Field(description="Modified before (epoch ms, or ISO date or date-time)")
        ] = None,
    ) -> QueryFilesResult:
        def work() -> QueryFilesData:
            filters = FileFilters(
                normalize_directory(directory),
                type,
                status,
                filter_tag(tag),
                modified_since=modifiedSince,
                modified_until=modifiedUntil,
            )
            descending = sortOrder == "desc" if sortOrder else sortBy != "path"
            with read.read_snapshot(app.db) as conn:
                page = read.query_files(conn, filters, limit, offset, FileOrder(sortBy, descending))
                if page.total == 0:
                    hints.check_folder(state, conn, filters.directory)
            return QueryFilesData(
                files=[FileInfo.of(f) for f in page.files],
                total=page.total,
                limit=page.limit,
                offset=page.offset,
                has_more=page.has_more,
            )

        return await answer(state, work)

    async def get_file(path: NotePath) -> GetFileResult:
        def work() -> FileData:
            clean = app.vault.check_note_path(path)
            with read.read_snapshot(app.db) as conn:
                detail = read.get_file(conn, clean)
            if detail is None:
                raise NoteNotFoundError(clean)
            info = FileInfo.of(detail.summary)
            links = FileLinks(
                outgoing=[t.target for t in detail.outgoing],
                incoming=detail.incoming,
                broken=[t.target for t in detail.outgoing if t.broken],
            )
            return FileData(
                **dict(info),
                aliases=list(detail.aliases),
                links=links,
                content_hash=detail.content_hash,
            )

        return await answer(state, work)

    async def get_file_content(
        path: NotePath,
        offset: ContentOffset = 0,
        length: ContentLength = MAX_CONTENT_CHARS,
    ) -> FileContentResult:
        def work() -> FileContentData:
            clean = app.vault.check_note_path(path)
            data = app.vault.read_note(clean)
            try:
                text = data.decode("utf-8").removeprefix("\ufeff")
            except UnicodeDecodeError as exc:
                raise NoteDecodeError(clean, f"invalid byte at offset {exc.start}") from None
            end = offset + length
            more = end < len(text)
            return FileContentData(
                path=clean,
                content=text[offset:end],
                size=len(data),
                offset=offset,
                total_length=len(text),
                truncated=more,
                next_offset=end if more else None,
            )

        return await answer(state, work, cache_hit=False)

    async def search_tags(
        tag: Annotated[str, Field(description="Tag to find, e.g. 'project' or '#proj*'")],
        limit: Limit = 100,
    ) -> SearchTagsResult:
        def work() -> SearchTagsData:
            key = tag_key(tag)
            if not key.strip("*?"):
                raise ArgumentError("tag", f"{tag!r} is not a tag")
            with read.read_snapshot(app.db) as conn:
                found = cache_graph.search_tags(conn, state.tag_index, key, limit)
            return SearchTagsData(
                tag=key,
                files=[TaggedFile.of(f) for f in found.files],
                count=found.total,
                limit=limit,
                has_more=len(found.files) < found.total,
                matched_tags=found.matched_tags,
            )

        return await answer(state, work)

    async def search_links(
        path: NotePath, direction: Direction = "both", limit: Limit = 100
    ) -> SearchLinksResult:
        def work() -> SearchLinksData:
            clean = app.vault.check_note_path(path)
            with read.read_snapshot(app.db) as conn:
                if not read.note_exists(conn, clean):
                    raise NoteNotFoundError(clean)
                found = read.search_links(conn, clean, direction, limit)
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
            )

        return await answer(state, work)

    async def get_stats() -> StatsResult:
        def work() -> StatsData:
            with read.read_snapshot(app.db) as conn:
                stats = read.get_stats(conn)
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

        return await answer(state, work)

    return [
        make_tool(query_files, state, title="Query notes", description=QUERY_FILES),
        make_tool(get_file, state, title="Get note metadata", description=GET_FILE),
        make_tool(
            get_file_content,
            state,
            title="Read note content",
            description=GET_FILE_CONTENT,
            cache_hit=False,
        ),
        make_tool(search_tags, state, title="Search by tag", description=SEARCH_TAGS),
        make_tool(search_links, state, title="Search links", description=SEARCH_LINKS),
        make_tool(get_stats, state, title="Vault statistics", description=GET_STATS),
    ]
