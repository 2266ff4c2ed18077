"""The bases pages' data: the vault's bases with their views (`/bases`), and one table view
of a base (`/bases/view`): its columns by display name, a page of rows in the view's order
under their group headings, and the view's summaries. Run by `runtime.base_views`, as
`query_base` runs it; cells are text, as the app's table shows them."""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field

from weaver.bases.values import Value
from weaver.bases.view import plain
from weaver.cache import read
from weaver.errors import WeaverError
from weaver.paging import Page, page_of
from weaver.runtime import base_views
from weaver.runtime.state import ServerState

ROWS_PER_PAGE = 100
BASES_PER_PAGE = 100


@dataclass(frozen=True, slots=True)
class BaseRowGroup:
    """Consecutive rows of a page under one group heading (no heading: an ungrouped view)."""

    heading: str | None
    count: int  # the group's rows over all pages
    rows: list[tuple[str, list[str]]] = field(default_factory=list)  # (path, cells)


@dataclass(frozen=True, slots=True)
class BaseTable:
    path: str
    block: int | None
    view: str | None
    views: list[str]
    error: str | None  # why the view cannot be shown (named expression and position)
    labels: list[str]
    groups: list[BaseRowGroup]
    summaries: list[tuple[str, str]]  # (column label, summary)
    page: Page[int]  # row positions shown, of all rows


def load_bases(state: ServerState, offset: int) -> Page[base_views.BaseListing]:
    with read.read_snapshot(state.app.db) as conn:
        listings = list(base_views.list_bases(conn, state.app.vault))
    return page_of(listings, offset, BASES_PER_PAGE)


def load_table(
    state: ServerState, path: str, view: str | None, block: int | None, offset: int
) -> BaseTable:
    """One view of the base at `path` (or why it cannot be shown), a page of rows from
    `offset`."""
    try:
        source = base_views.read_source(state.app.vault, path, block)
        with read.read_snapshot(state.app.db) as conn:
            run = base_views.run_source(conn, source, view)
    except WeaverError as exc:
        return BaseTable(path, block, view, [], str(exc), [], [], [], Page([], 0))
    result = run.result
    positions = list(range(len(result.rows)))
    page = page_of(positions, offset, ROWS_PER_PAGE)
    labels = {c.key: c.label for c in result.columns}
    return BaseTable(
        path=source.path,
        block=source.block,
        view=result.view.name,
        views=[v.name for v in run.document.views],
        error=None,
        labels=[c.label for c in result.columns],
        groups=_grouped(run, page.items),
        summaries=[(labels.get(k, k), cell_text(v)) for k, v in result.summaries.items()],
        page=page,
    )


def _grouped(run: base_views.BaseRun, positions: list[int]) -> list[BaseRowGroup]:
    result = run.result
    starts = [g.start for g in result.groups or ()]
    groups: list[BaseRowGroup] = []
    for position in positions:
        # Groups hold consecutive rows in order: the one holding a row is found by its start.
        found = bisect.bisect_right(starts, position) - 1
        group = result.groups[found] if result.groups and found >= 0 else None
        heading = None if group is None else cell_text(group.key) or "(empty)"
        count = len(result.rows) if group is None else group.count
        if not groups or groups[-1].heading != heading:
            groups.append(BaseRowGroup(heading, count))
        row = result.rows[position]
        groups[-1].rows.append((row.path, [cell_text(v) for v in row.cells]))
    return groups


def cell_text(value: Value) -> str:
    """A value as a table cell shows it: text as is, lists joined, nothing as blank."""
    shown = plain(value)
    if shown is None:
        return ""
    if isinstance(shown, str):
        return shown
    if isinstance(shown, bool):
        return "true" if shown else "false"
    if isinstance(shown, list):
        return ", ".join(s if isinstance(s, str) else json.dumps(s) for s in shown)
    return json.dumps(shown, ensure_ascii=False) if isinstance(shown, dict) else str(shown)
