"""Rows of base views kept between runs, so a view asked again is not evaluated again.

A view whose rows depend on their own file alone (`weaver.bases.row_key`) keeps each file's row
(dropped by the filters, or kept with the values the view reads) beside the file's listing in
the cache: path, size, dates and content hash, from which all its facts follow. The next run
uses them all when the cache has not changed since (`cache.changes.unchanged_since`: its
version, and no pass under way). Else it lists again the notes the change log names (at most
`PATCHED`; more, or no log reaching back, and every file) and the attachments, uses the kept
row of every file listed the same, and evaluates the others. So another page or the same
question again costs the sort and the page; an edit, the edited notes' rows too. Rows are kept
per key and day (`today()` may be read), at most `MAX_ROWS` per database; the views used least
recently go first.

Nothing kept is ever stale: a file whose listing changed is evaluated again, a file no longer
listed is dropped, a key names the expressions' text, so an edited base is another key, and
each database (engine) has its own views' rows (`kept_for`)."""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, Engine

from weaver.bases.view import EvaluatedRow
from weaver.cache import changes
from weaver.cache.base_files import CachedFile, FileRow, Narrowed
from weaver.cache.read import last_updated

MAX_ROWS = 50_000  # files' rows kept per database: about 0.8 kB each, some 40 MB at most

PATCHED = 500  # notes changed since a view's last run listed by their paths; more: all listed

Evaluate = Callable[[list[CachedFile]], Iterable[tuple[str, EvaluatedRow | None]]]
# The files a view's filter may keep (None), or only those of these notes, and the attachments.
Listing = Callable[[Collection[str] | None], Narrowed]


@dataclass(frozen=True, slots=True)
class _View:
    """One view's rows: the cache's version and the listing they were made for (`notes` of its
    rows are notes, the rest attachments), each file's listing and row (None: the filters drop
    it) by path, and the rows kept by the filters."""

    version: int | None
    listing: list[FileRow]
    notes: int
    by_path: dict[str, tuple[FileRow, EvaluatedRow | None]]
    kept: list[EvaluatedRow]


class KeptRows:
    """The rows kept, per view key; safe to use from several threads."""

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._views: OrderedDict[Hashable, _View] = OrderedDict()
        self._lock = threading.Lock()

    def rows(
        self, key: Hashable, conn: Connection, listing: Listing, evaluate: Evaluate
    ) -> list[EvaluatedRow]:
        """The rows the filters keep of the files `listing` gives: kept ones, and those of files
        changed since evaluated by `evaluate` (whose errors propagate; nothing is kept then).
        The list is shared: read it, do not change it."""
        with self._lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
        if view is not None and changes.unchanged_since(conn, view.version):
            return view.kept  # no file changed since: not even the listing is read
        # The version before the listing: a pass ending between the two leaves the listing
        # newer than its version, which only costs the next run a listing.
        version = last_updated(conn)
        changed = None
        if view is not None:
            changed = changes.changed_since(conn, view.version, version, PATCHED)
        if view is None or changed is None:
            updated = self._listed(view, listing(None), evaluate)
        else:
            updated = self._patched(view, changed, listing(changed), evaluate)
        self._keep(key, dataclasses.replace(updated, version=version))
        return updated.kept

    def kept(self) -> int:
        """How many files' rows are kept, of every view."""
        with self._lock:
            return sum(len(view.by_path) for view in self._views.values())

    def clear(self) -> None:
        with self._lock:
            self._views.clear()

    def _listed(self, view: _View | None, narrowed: Narrowed, evaluate: Evaluate) -> _View:
        """The view over every file listed, the kept rows of those listed the same."""
        if view is not None and view.listing == narrowed.rows:  # one compare of tuples
            return view
        before = {} if view is None else view.by_path
        by_path = _updated(before, {}, narrowed, narrowed.rows, evaluate)
        return _View(None, narrowed.rows, narrowed.notes, by_path, _kept(by_path))

    def _patched(
        self, view: _View, changed: Collection[str], narrowed: Narrowed, evaluate: Evaluate
    ) -> _View:
        """The view with the `changed` notes listed again (`narrowed` lists those the filter
        may keep, and every attachment: the change log names notes only)."""
        notes = [row for row in view.listing[: view.notes] if row[0] not in changed]
        notes += narrowed.rows[: narrowed.notes]
        by_path = dict(view.by_path)
        for path in (*changed, *(row[0] for row in view.listing[view.notes :])):
            by_path.pop(path, None)
        by_path = _updated(view.by_path, by_path, narrowed, narrowed.rows, evaluate)
        listing = notes + narrowed.rows[narrowed.notes :]
        return _View(None, listing, len(notes), by_path, _kept(by_path))

    def _keep(self, key: Hashable, view: _View) -> None:
        with self._lock:
            self._views.pop(key, None)
            if len(view.by_path) > self.max_rows:
                return
            self._views[key] = view
            total = sum(len(kept.by_path) for kept in self._views.values())
            while total > self.max_rows:
                _, dropped = self._views.popitem(last=False)
                total -= len(dropped.by_path)


def _updated(
    before: dict[str, tuple[FileRow, EvaluatedRow | None]],
    by_path: dict[str, tuple[FileRow, EvaluatedRow | None]],
    narrowed: Narrowed,
    rows: list[FileRow],
    evaluate: Evaluate,
) -> dict[str, tuple[FileRow, EvaluatedRow | None]]:
    """`by_path` with the listed `rows`: the row kept `before` for a file listed the same,
    else the file evaluated."""
    changed: list[FileRow] = []
    for listed in rows:
        found = before.get(listed[0])
        if found is not None and found[0] == listed:
            by_path[listed[0]] = found
        else:
            changed.append(listed)
    if changed:
        listings = {listed[0]: listed for listed in changed}
        for path, row in evaluate(narrowed.files_of(changed)):
            by_path[path] = (listings[path], row)
    return by_path


def _kept(by_path: dict[str, tuple[FileRow, EvaluatedRow | None]]) -> list[EvaluatedRow]:
    return [row for _, row in by_path.values() if row is not None]


# A view's listing and the version it was made at mean something only in their database (a
# row, given its file's listing, is the same anywhere). So each engine has its own rows, gone
# with it.
_BY_ENGINE: weakref.WeakKeyDictionary[Engine, KeptRows] = weakref.WeakKeyDictionary()
_BY_ENGINE_LOCK = threading.Lock()


def kept_for(engine: Engine) -> KeptRows:
    """The rows kept of the views over the database of `engine`."""
    with _BY_ENGINE_LOCK:
        kept = _BY_ENGINE.get(engine)
        if kept is None:
            kept = _BY_ENGINE[engine] = KeptRows()
        return kept
