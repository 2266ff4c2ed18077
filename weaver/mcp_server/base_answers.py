"""What a page of a base's view shows a model: its columns, a page of rows with their values as
JSON, the view's groups and summaries, sized to fit an answer and saying how to get the rest.
Shared by the `bases` tools and the `weaver://base/` resource."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from weaver.bases.view import GroupResult, ResultRow, plain
from weaver.mcp_server.schemas import WireModel
from weaver.mcp_server.sizing import fitting_items
from weaver.paging import has_more
from weaver.runtime.base_views import BaseListing, BaseRun

# A text value in a page is cut to this many characters, and a list to this many items: one long
# property must not crowd the page out (get_file_content reads a note whole).
CELL_CHARS = 300
CELL_ITEMS = 50
# The rows' share of an answer (estimated tokens): well under the 25,000-token bound with the
# columns, groups and summaries beside them.
ROW_TOKENS = 15_000
# Groups an answer lists at most, from the page's first group on (the rest: `groupsTotal`).
MAX_GROUPS = 100


class ColumnInfo(WireModel):
    key: str = Field(description="note.x, file.x or formula.x")
    label: str = Field(description="The display name the base gives it")


class RowInfo(WireModel):
    path: str
    values: list[Any] = Field(description="One per column, in the columns' order")


class GroupInfo(WireModel):
    key: Any = Field(description="The value the group's rows share")
    start: int = Field(description="Position of the group's first row among all rows")
    count: int
    summaries: dict[str, Any]


class BaseViewData(WireModel):
    path: str | None = Field(description="The base file or note; null for query_notes")
    block: int | None = Field(description="The ```base block of the note, from 0")
    view: str
    type: str = Field(description="The view's layout: table, cards, list, map, ...")
    views: list[str] = Field(description="Every view of the base, by name")
    columns: list[ColumnInfo]
    rows: list[RowInfo]
    total: int = Field(description="Rows the view shows, over all pages")
    matched: int = Field(description="Rows that pass the filters, before the view's limit")
    groups: list[GroupInfo] | None = Field(description="None when the view is not grouped")
    groups_total: int | None = None
    summaries: dict[str, Any] = Field(description="Column key -> the view's summary of it")
    offset: int
    has_more: bool = Field(description="More rows: call again with offset + len(rows)")
    now: str = Field(description="The time now() and today() read, ISO")
    hint: str | None = None


class BaseListingInfo(WireModel):
    path: str
    block: int | None = Field(description="The block's index in its note; null for a .base file")
    line: int | None = Field(description="The block's opening line")
    views: list[dict[str, str]] = Field(
        description="name and type of each view, and `error` for one that cannot run"
    )
    error: str | None = Field(description="Why the base cannot be read, if it cannot")


class BaseListData(WireModel):
    bases: list[BaseListingInfo]
    total: int
    offset: int
    has_more: bool


def view_answer(run: BaseRun, limit: int, offset: int, ad_hoc: bool = False) -> dict[str, Any]:
    """A page of `run`'s rows from `offset`, at most `limit`, cut to what an answer holds."""
    result = run.result
    cut: list[str] = []
    rows = fitting_items([_row(r, cut) for r in result.rows[offset : offset + limit]], ROW_TOKENS)
    groups = _groups(result.groups, offset)
    data = BaseViewData(
        path=run.source.path or None,
        block=run.source.block,
        view=result.view.name,
        type=result.view.type,
        views=[] if ad_hoc else [v.name for v in run.document.views],
        columns=[ColumnInfo(key=c.key, label=c.label) for c in result.columns],
        rows=[],
        total=len(result.rows),
        matched=result.matched,
        groups=None,
        groups_total=None if result.groups is None else len(result.groups),
        summaries={key: _cell(value, cut) for key, value in result.summaries.items()},
        offset=offset,
        has_more=has_more(offset, len(rows), len(result.rows)),
        now=run.now.isoformat(timespec="seconds"),
        hint=_hint(offset, len(rows), len(result.rows), bool(cut), result.groups, groups),
    )
    return data.to_wire() | {"rows": rows, "groups": groups}


def listing_answer(listings: Sequence[BaseListing], total: int, offset: int) -> dict[str, Any]:
    bases = [
        BaseListingInfo(
            path=b.path,
            block=b.block,
            line=b.line,
            views=[_view_entry(name, kind, fault) for name, kind, fault in b.views],
            error=b.error,
        )
        for b in listings
    ]
    more = has_more(offset, len(bases), total)
    return BaseListData(bases=bases, total=total, offset=offset, has_more=more).to_wire()


def _view_entry(name: str, kind: str, fault: str | None) -> dict[str, str]:
    entry = {"name": name, "type": kind}
    return entry if fault is None else entry | {"error": fault}


def fingerprint_text(run: BaseRun) -> str:
    """Every row and value of the view, as text: what a subscription compares."""
    rows = [[r.path, *(_cell(v, []) for v in r.cells)] for r in run.result.rows]
    summaries = {k: _cell(v, []) for k, v in run.result.summaries.items()}
    return json.dumps([rows, summaries], ensure_ascii=False, sort_keys=True, default=str)


def _row(row: ResultRow, cut: list[str]) -> dict[str, Any]:
    return {"path": row.path, "values": [_cell(value, cut) for value in row.cells]}


def _cell(value: object, cut: list[str]) -> Any:
    """The value as JSON, a long text or list cut short (`cut` then says so)."""
    shown = plain(value)  # type: ignore[arg-type]
    return _short(shown, cut)


def _short(shown: Any, cut: list[str]) -> Any:
    if isinstance(shown, str) and len(shown) > CELL_CHARS:
        cut.append("text")
        return shown[: CELL_CHARS - 1] + "…"
    if isinstance(shown, list):
        if len(shown) > CELL_ITEMS:
            cut.append("list")
        return [_short(item, cut) for item in shown[:CELL_ITEMS]]
    if isinstance(shown, dict):
        return {key: _short(item, cut) for key, item in shown.items()}
    return shown


def _groups(groups: Sequence[GroupResult] | None, offset: int) -> list[dict[str, Any]] | None:
    """At most `MAX_GROUPS` groups, from the one holding the page's first row on."""
    if groups is None:
        return None
    first = next((i for i, g in enumerate(groups) if g.start + g.count > offset), len(groups))
    return [
        {
            "key": _cell(g.key, []),
            "start": g.start,
            "count": g.count,
            "summaries": {key: _cell(value, []) for key, value in g.summaries.items()},
        }
        for g in groups[first : first + MAX_GROUPS]
    ]


def _hint(
    offset: int,
    shown: int,
    total: int,
    cut: bool,
    groups: Sequence[GroupResult] | None,
    listed: list[dict[str, Any]] | None,
) -> str | None:
    hints = []
    if has_more(offset, shown, total):
        hints.append(f"More rows: offset {offset + shown}.")
    if cut:
        hints.append(
            f"Long values are cut to {CELL_CHARS} characters or {CELL_ITEMS} items; "
            "get_file reads a note's properties whole."
        )
    if groups is not None and listed is not None and len(listed) < len(groups):
        hints.append(
            f"{len(groups)} groups; {len(listed)} listed from the page's first: "
            "a later offset lists later groups."
        )
    return " ".join(hints) or None
