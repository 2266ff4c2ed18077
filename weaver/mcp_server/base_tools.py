"""The Bases tools (toolset `bases`): list_bases finds the vault's bases, query_base answers one
view of a `.base` file or a note's ```base block as Obsidian shows it, query_notes answers a
filter, formulas and a sort written in the same language without a file. Thin edges over
`weaver.runtime.base_views` (reading and running) and `base_answers` (what a page shows)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from weaver.bases.document import document_from_query, view_of
from weaver.cache import read
from weaver.mcp_server import base_answers
from weaver.mcp_server.arguments import Limit, Offset
from weaver.mcp_server.base_answers import BaseListData, BaseViewData
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.envelope import ArgumentError
from weaver.paging import page_of
from weaver.runtime import base_views
from weaver.runtime.state import ServerState

LIST_BASES = """List the vault's Obsidian Bases: `.base` files and the ```base blocks of notes,
each with its views (name and layout), or the reason it cannot be read. Use it to find what to
pass to query_base. Returns `bases` (path, block: the block's index in its note or null for a
file, line, views, error), `total`, `hasMore`. Example: {} or {"offset": 50}."""

QUERY_BASE = """Evaluate one view of an Obsidian Base as the app shows it: the view's rows
(files that pass the base's and the view's filters), its columns (properties, file fields and
formulas, in the view's order, with their display names), sorted, grouped and limited as the
view says, with the view's summaries.

`path` is a `.base` file, or a note holding ```base blocks (`block` picks one, from 0). `view`
is a view's name (default: the first). Each row gives the file's `path` and `values` in column
order; dates are ISO, links and files their paths. Groups give their key, their first row's
position and their size. An expression Weaver cannot evaluate (a syntax or type error, an
unsupported function) is an error naming the expression and the character position; nothing
is taken as true. Example: {"path": "Reading.base", "view": "To read"}."""

QUERY_NOTES = """Ask a question about the notes' properties in the Bases language, without a
base file: a filter, formulas, a sort and the columns to show.

`filter` is an expression (`file.hasTag("book") && rating >= 4`) or an object of `and`, `or`,
`not` lists as in a .base file. `formulas` maps names to expressions (usable as
`formula.<name>`). `sort` is a list of {property, direction: ASC|DESC}; `groupBy` one such.
`columns` lists what each row shows (e.g. ["file.name", "note.status", "formula.age"]; default:
the sorted properties and the formulas). Bare names are note properties (`status` is
`note.status`); `file.*` are file fields (name, path, folder, ext, size, ctime, mtime, tags,
links, backlinks); `now()`, `today()`, `date()`, `if()` and the documented functions work.
Example: {"filter": "file.inFolder(\\"Projects\\") && status != \\"done\\"",
"formulas": {"age": "(now() - file.ctime).days"}, "sort": [{"property": "formula.age",
"direction": "DESC"}]}."""

BasePath = Annotated[
    str, Field(description="A .base file, or a note holding ```base blocks, e.g. 'Books.base'")
]
DEFAULT_ROWS = 50
DEFAULT_BASES = 50


@tool("List bases", LIST_BASES, toolset="bases", cache_hit=False, output=BaseListData)
def list_bases(state: ServerState, limit: Limit = DEFAULT_BASES, offset: Offset = 0) -> Any:
    with read.read_snapshot(state.app.db) as conn:
        listings = list(base_views.list_bases(conn, state.app.vault))
    page = page_of(listings, offset, limit)
    return base_answers.listing_answer(page.items, len(listings), offset)


@tool("Query a base", QUERY_BASE, toolset="bases", cache_hit=False, output=BaseViewData)
def query_base(
    state: ServerState,
    path: BasePath,
    view: Annotated[str | None, Field(description="A view's name (default: the first)")] = None,
    block: Annotated[
        int | None, Field(ge=0, description="For a note: which ```base block, from 0")
    ] = None,
    limit: Limit = DEFAULT_ROWS,
    offset: Offset = 0,
) -> Any:
    source = base_views.read_source(state.app.vault, path, block)
    with read.read_snapshot(state.app.db) as conn:
        run = base_views.run_source(conn, source, view)
    return base_answers.view_answer(run, limit, offset)


Expression = Annotated[
    str | dict[str, Any] | None,
    Field(description="An expression, or {and|or|not: [...]} as in a .base file"),
]


@tool("Query notes", QUERY_NOTES, toolset="bases", cache_hit=False, output=BaseViewData)
def query_notes(
    state: ServerState,
    filter: Expression = None,
    formulas: Annotated[
        dict[str, str] | None, Field(description="name -> expression, read as formula.<name>")
    ] = None,
    sort: Annotated[
        list[dict[str, str]] | None,
        Field(description='[{"property": "note.due", "direction": "ASC"}]'),
    ] = None,
    groupBy: Annotated[
        dict[str, str] | None, Field(description='{"property": ..., "direction": ...}')
    ] = None,
    columns: Annotated[
        list[str] | None, Field(description="What each row shows, e.g. ['note.status']")
    ] = None,
    limit: Limit = DEFAULT_ROWS,
    offset: Offset = 0,
) -> Any:
    if filter is None and not formulas and not sort and groupBy is None:
        raise ArgumentError("filter", "give a filter, formulas, a sort or a groupBy")
    order = columns or _default_columns(formulas, sort, groupBy)
    document = document_from_query(filter, formulas, sort, order, groupBy, None)
    source = base_views.AD_HOC
    with read.read_snapshot(state.app.db) as conn:
        run = base_views.run_document(conn, source, document, view_of(document, None))
    return base_answers.view_answer(run, limit, offset, ad_hoc=True)


def _default_columns(
    formulas: dict[str, str] | None,
    sort: list[dict[str, str]] | None,
    group_by: dict[str, str] | None,
) -> list[str]:
    """What a question's answer shows when it names no columns: its file's name, what it sorts
    and groups by, and its formulas, each once."""
    keys = ["file.name"]
    keys += [s["property"] for s in sort or () if "property" in s]
    if group_by and "property" in group_by:
        keys.append(group_by["property"])
    keys += [f"formula.{name}" for name in formulas or {}]
    return list(dict.fromkeys(keys))
