"""The survey tools: list_tags, list_folders, list_problems. Thin edges over
`weaver.cache.browse`; every one paged with `limit`/`offset`, `total` and `hasMore`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from sqlalchemy import Connection

from weaver.cache import attachment_text, browse, read
from weaver.mcp_server import hints
from weaver.mcp_server.arguments import (
    Filter,
    Limit,
    Offset,
    clamp_to,
    normalize_directory,
    tag_key,
)
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.schemas import WireModel
from weaver.paging import has_more
from weaver.runtime.state import ServerState

MAX_DEPTH = 20

Depth = Annotated[
    int | None,
    Field(ge=1, le=MAX_DEPTH, description="Levels listed below the prefix/folder (default: all)"),
    clamp_to(1, MAX_DEPTH),
]


class TagInfo(WireModel):
    tag: str = Field(description="As notes write it (no '#')")
    key: str = Field(description="Normalised: what tag filters match")
    notes: int = Field(description="Notes carrying it or a tag nested below it")
    own: int = Field(description="Notes carrying exactly this tag (0 for a bare parent)")
    children: int = Field(description="Tags nested directly below it")
    depth: int = Field(description="0 for a top-level tag, 1 for 'a/b', ...")


class ListTagsData(WireModel):
    prefix: str | None
    tags: list[TagInfo]
    total: int
    limit: int
    offset: int
    has_more: bool


class FolderInfo(WireModel):
    path: str
    notes: int = Field(description="Notes in it and in its subfolders")
    own: int = Field(description="Notes directly in it")
    subfolders: int = Field(description="Folders directly below it")
    depth: int = Field(description="0 for a top-level folder")


class ListFoldersData(WireModel):
    folder: str | None
    folders: list[FolderInfo]
    root_notes: int = Field(description="Notes at the vault root, outside any folder")
    total: int
    limit: int
    offset: int
    has_more: bool


class ProblemInfo(WireModel):
    path: str | None = Field(
        default=None, description="The note (errors, orphans) or PDF (attachments)"
    )
    error: str | None = Field(default=None, description="Why it was indexed with an error")
    target: str | None = Field(default=None, description="A broken link's target, as written")
    occurrences: int | None = Field(default=None, description="Links to that target")
    source_count: int | None = Field(default=None, description="Notes holding such links")
    sources: list[str] | None = Field(default=None, description="The first 5 of those notes")


ProblemKind = Literal["errors", "broken_links", "orphans", "attachments"]


class ListProblemsData(WireModel):
    kind: ProblemKind
    problems: list[ProblemInfo]
    total: int
    limit: int
    offset: int
    has_more: bool


LIST_TAGS = """The vault's tags with their note counts, as a tree of nested tags. Use it to see how
notes are tagged.

Every tag is listed with `notes` (notes carrying it or one nested below it: what search_tags
finds), `own` (exactly this tag), `children` (tags directly below it) and `depth`; parents of
nested tags are listed even when no note carries them alone. `prefix` lists a tag and what is
nested below it ('project' -> project, project/alpha, ...); `depth` 1 lists only the top level
(or the prefix and its direct children), so the tree can be walked level by level. `sortBy`
"name" (the tree's order) or "count" (most notes first). Paged: `total`, `hasMore`, `offset`.
Examples: {"depth": 1}; {"prefix": "project", "sortBy": "count"}."""

LIST_FOLDERS = """The vault's folders with their note counts. Use it to learn how the vault is
organised.

Each folder comes with `notes` (in it and below), `own` (directly in it), `subfolders` and
`depth`, by path; `rootNotes` counts the notes outside any folder. `folder` lists what is
below one folder ("Folder not found" with suggestions when there is none); `depth` 1 lists
one level only. Paged: `total`, `hasMore`, `offset`. Example: {"depth": 1}."""

LIST_PROBLEMS = """What needs fixing, one kind at a time: notes indexed with an error, broken
links, orphan notes, PDFs whose text could not be searched.

`kind` "errors": notes indexed with an error (frontmatter that does not parse, text that is not
UTF-8, a file too large), with the error. "broken_links": link targets that match no file,
most linked first, each with `occurrences`, `sourceCount` and the first 5 `sources` (the
notes holding them). "orphans": notes with no resolved link to or from another note.
"attachments": PDFs whose text could not all be read, why in `error`. Paged:
`total` (what get_stats counts for errors), `hasMore`, `offset`. Use get_file on a note for
its links, search_links for all notes holding a broken link. Example:
{"kind": "broken_links", "limit": 20}."""


@tool("List tags", LIST_TAGS, toolset="tags")
def list_tags(
    state: ServerState,
    prefix: Annotated[Filter, Field(description="A tag and those nested below it")] = None,
    depth: Depth = None,
    sortBy: Annotated[
        Literal["name", "count"], Field(description="name: the tree's order; count: most first")
    ] = "name",
    limit: Limit = 100,
    offset: Offset = 0,
) -> ListTagsData:
    key = tag_key(prefix) if prefix else None
    with read.read_snapshot(state.app.db) as conn:
        page = browse.list_tags(conn, key or None, depth, limit, offset, sortBy)
    tags = [
        TagInfo(
            tag=t.tag,
            key=t.key,
            notes=t.notes,
            own=t.own,
            children=t.children,
            depth=t.key.count("/"),
        )
        for t in page.items
    ]
    return ListTagsData(
        prefix=key or None,
        tags=tags,
        total=page.total,
        limit=limit,
        offset=offset,
        has_more=has_more(offset, len(tags), page.total),
    )


@tool("List folders", LIST_FOLDERS, toolset="notes")
def list_folders(
    state: ServerState,
    folder: Annotated[Filter, Field(description="Only folders below this one")] = None,
    depth: Depth = None,
    limit: Limit = 200,
    offset: Offset = 0,
) -> ListFoldersData:
    clean = normalize_directory(folder)
    with read.read_snapshot(state.app.db) as conn:
        hints.check_folder(state, conn, clean)
        page = browse.list_folders(conn, clean, depth, limit, offset)
        root = browse.root_notes(conn)
    folders = [
        FolderInfo(
            path=f.path,
            notes=f.notes,
            own=f.own,
            subfolders=f.subfolders,
            depth=f.path.count("/"),
        )
        for f in page.items
    ]
    return ListFoldersData(
        folder=clean,
        folders=folders,
        root_notes=root,
        total=page.total,
        limit=limit,
        offset=offset,
        has_more=has_more(offset, len(folders), page.total),
    )


@tool("List problems", LIST_PROBLEMS, toolset="notes")
def list_problems(
    state: ServerState,
    kind: Annotated[
        ProblemKind, Field(description="errors, broken_links, orphans or attachments")
    ] = "errors",
    limit: Limit = 50,
    offset: Offset = 0,
) -> ListProblemsData:
    with read.read_snapshot(state.app.db) as conn:
        problems, total = _problems(state, conn, kind, limit, offset)
    return ListProblemsData(
        kind=kind,
        problems=problems,
        total=total,
        limit=limit,
        offset=offset,
        has_more=has_more(offset, len(problems), total),
    )


def _problems(
    state: ServerState, conn: Connection, kind: str, limit: int, offset: int
) -> tuple[list[ProblemInfo], int]:
    if kind == "errors":
        errors = browse.notes_with_errors(conn, limit, offset)
        return [ProblemInfo(path=e.path, error=e.error) for e in errors.items], errors.total
    if kind == "broken_links":
        broken = browse.broken_links(conn, limit, offset, state.broken.get(conn))
        items = [
            ProblemInfo(
                target=b.target,
                occurrences=b.occurrences,
                source_count=b.source_count,
                sources=b.sources,
            )
            for b in broken.items
        ]
        return items, broken.total
    if kind == "attachments":
        pdfs = attachment_text.pdf_problems(conn, limit, offset)
        return [ProblemInfo(path=p.path, error=p.problem) for p in pdfs.items], pdfs.total
    orphans = state.orphans.get(conn)
    return [ProblemInfo(path=p) for p in orphans[offset : offset + limit]], len(orphans)
