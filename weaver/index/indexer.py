"""Indexing: bring the cache in step with the vault on disk.

One pipeline serves both callers: `reconcile` compares the whole vault with the cache (start-up,
`weaver index`), `apply_paths` looks only at paths the watcher reported. Each plans what changed
from cheap `stat` data (size + mtime, then the content hash), parses only changed notes
(`weaver.index.workers`, in worker processes on a big pass), writes in a few bulk statements per
transaction, re-resolves just the links a new or vanished file can affect, and records typed
events in the change feed (`cache.feed`, in the transactions that apply them) before publishing
them on the bus.

Two things keep the cost of a pass in proportion to what changed rather than to the vault: a
watcher batch loads only the stored rows of its own paths, and reuses the indexer's
`LinkResolver` (every path in the cache) as long as the cache's version is the one this indexer
last wrote.

It stays whole at ~510 lines: most of it is `Indexer`, whose plan, writes and events of one pass
share its state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Protocol

import structlog
from sqlalchemy import Connection, Engine, RootTransaction

from weaver.cache import changes, feed, task_rows, write
from weaver.cache.bulk import indexes_deferred
from weaver.cache.db import bulk_writes, open_engine
from weaver.cache.rows import NoteRecord, StoredFile
from weaver.index.apart import ApartPasses, reconcile_apart, serve_pass
from weaver.index.workers import ReadChunk, default_workers, read_notes
from weaver.markdown.parser import PARSER_VERSION
from weaver.markdown.resolver import LinkResolver, path_key
from weaver.tasks.statuses import SETTINGS_FILE, StatusRegistry, read_status_registry
from weaver.vault.events import (
    EventBus,
    NoteAdded,
    NoteDeleted,
    NoteModified,
    NoteMoved,
    VaultEvent,
)
from weaver.vault.fs import FileStat, Vault, is_indexed_path, is_note_path

log = structlog.get_logger(__name__)

# Notes parsed per write transaction: bounds memory on a huge first index while keeping the
# number of transactions small.
WRITE_BATCH = 2000
# Notes to (re)write from which a pass counts as big (see `_write_batches`).
BIG_PASS = 2000
# Set in cache_state by a migration whose new columns or tables need every note parsed again
# (0003 adds full-text search): the next reconcile re-reads all notes, as `--full` does, and
# clears it. Unchanged notes publish no events, so workflows do not fire for an upgrade.
REPARSE_KEY = "reparse_pending"
# The `PARSER_VERSION` the cache's notes were parsed with; another one (or none, from before it
# was kept) makes the next reconcile re-read every note, as `reparse_pending` does.
PARSED_BY_KEY = "parser_version"
# Set while a first index is under way: one that stops midway (Ctrl-C, a crash) is resumed by
# the next reconcile, whose adds are still discoveries rather than notes created that day.
FIRST_INDEX_KEY = "first_index_pending"


class PassObserver(Protocol):
    """Someone watching a reconcile as it goes (`weaver index`'s progress bar on a terminal).

    Told once per parsed chunk, never per note, so watching costs the pass nothing. An observed
    pass tells the observer of each note that failed to parse instead of logging it, and logs
    its summary at debug level: the observer shows both to the person waiting.
    """

    def notes_read(self, done: int, total: int) -> None:
        """`done` of the pass's `total` notes to read are read, parsed and written."""

    def note_failed(self, path: str, error: str) -> None:
        """The note at `path` was indexed, but could not be parsed in full."""


@dataclass(frozen=True, slots=True)
class Written:
    """What a pass remembers of a note it wrote (not the whole record, whose text and links
    would otherwise stay in memory until the end of a first index)."""

    path: str
    content_hash: str


@dataclass
class IndexReport:
    """What one indexing pass did; printed by `weaver index`, logged by the watcher."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    moved: int = 0
    unchanged: int = 0
    errors: int = 0
    relinked: int = 0
    seconds: float = 0.0
    events: list[VaultEvent] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.moved)

    def summary(self) -> dict[str, int | float]:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "moved": self.moved,
            "unchanged": self.unchanged,
            "errors": self.errors,
            "relinked": self.relinked,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class _Plan:
    """The difference between disk and cache for the paths in scope."""

    candidates: list[FileStat] = field(default_factory=list)  # new or possibly changed notes
    attachments: list[FileStat] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    # `stored` is the whole cache (a reconcile), not just the paths in scope (a watcher batch).
    complete: bool = False
    version: object = None  # the cache's `last_updated` when `stored` was read
    # A first index, or the rest of one that stopped midway: its adds are `initial`.
    first: bool = False
    # Whether the pass records the notes it changes (`cache.changes`), decided once before it
    # writes: not for a first index or a big pass, after which readers rebuild anyway.
    recorded: bool = False
    touched: int = 0  # notes whose size or time changed, not their content


@dataclass(slots=True)
class _Request:
    """Paths a caller of `Indexer.apply_paths_together` waits for, and how their pass ended."""

    paths: frozenset[str]
    done: bool = False
    error: BaseException | None = None


class Indexer:
    """Keeps one cache in step with one vault: one writer per cache, one pass at a time.

    Passes are serialised with a lock, so the watcher and a write tool of the same process
    (which applies its own change at once) never plan against each other's half-done work.
    """

    def __init__(
        self,
        engine: Engine,
        vault: Vault,
        bus: EventBus | None = None,
        parse_workers: int | None = None,
        apart: ApartPasses | None = None,
    ) -> None:
        self.engine = engine
        self.vault = vault
        self.bus = bus or EventBus()
        # Processes that parse notes beside this one on a big pass (`weaver.index.workers`).
        self.parse_workers = default_workers() if parse_workers is None else parse_workers
        # A lasting process's big reconciles run in a child process (`weaver.index.apart`).
        self.apart = apart
        self._lock = threading.RLock()
        # Every file path in the cache, and the cache version it matches (see the docstring).
        self._resolver: LinkResolver | None = None
        self._version: object = None
        # Paths whose callers wait in `apply_paths_together`, with each caller's outcome.
        self._waiting: list[_Request] = []
        self._waiting_lock = threading.Lock()
        # The vault's Tasks plugin statuses, read on the first pass and again when the
        # watcher reports their file; `statuses_problem` says why they are the defaults.
        self.statuses: StatusRegistry | None = None
        self.statuses_problem: str | None = None
        # Called after a pass that added, changed or removed attachments (the bus carries
        # note events only): the PDF text worker wakes on it instead of polling the cache.
        self.attachment_listeners: list[Callable[[], None]] = []

    def reconcile(self, full: bool = False, observer: PassObserver | None = None) -> IndexReport:
        """Compare the whole vault with the cache and apply the difference."""
        with self._lock:
            return self._reconcile(full, observer)

    def refill(self, replace_cache: Callable[[], object]) -> IndexReport:
        """Run `replace_cache` (a corrupt cache moved aside, a new empty one made: see
        `runtime.rebuild`), then fill the new cache from the notes, with no other pass between
        the two; passes asked for meanwhile wait, then apply to the new cache."""
        with self._lock:
            self._resolver, self._version = None, None
            replace_cache()
            return self._reconcile(False, None)

    def _reconcile(self, full: bool, observer: PassObserver | None) -> IndexReport:
        started = time.perf_counter()
        self._load_statuses()
        pending = self._state(REPARSE_KEY) is True or self._state(PARSED_BY_KEY) != PARSER_VERSION
        full = full or pending
        on_disk, stored, plan = self._plan_all(full)
        if self.apart is not None and len(plan.candidates) >= self.apart.min_notes:
            del on_disk, stored, plan  # the child reads them again: not kept here meanwhile
            apart = reconcile_apart(self.apart, self.vault, self.parse_workers, full)
            if isinstance(apart, IndexReport):
                self._took_over(apart)
                return apart
            on_disk, stored, plan = self._plan_all(full)  # what the child wrote, if anything
        report = self._apply(plan, stored, LinkResolver(on_disk), started, observer, full)
        if pending:
            with self.engine.begin() as conn:
                write.set_state(conn, REPARSE_KEY, False)
                write.set_state(conn, PARSED_BY_KEY, PARSER_VERSION)
        if len(on_disk) >= BIG_PASS:
            self._ensure_statistics()
        return report

    def _plan_all(self, full: bool) -> tuple[dict[str, FileStat], dict[str, StoredFile], _Plan]:
        """The whole vault on disk, the whole cache, and what a reconcile would do."""
        on_disk = {s.path: s for s in self.vault.scan()}
        with self.engine.connect() as conn:
            version = write.get_state(conn, "last_updated")
            stored = write.load_stored_files(conn)
        plan = _plan(on_disk, stored, scope=None, full=full)
        plan.complete, plan.version = True, version
        return on_disk, stored, plan

    def _took_over(self, report: IndexReport) -> None:
        """After a pass a child ran (`weaver.index.apart`): what `_apply` does after its writes,
        here. The resolver is built again from the cache by the next watcher batch."""
        self._resolver, self._version = None, None  # the child logged "index applied"
        self.bus.publish(report.events)
        for listener in self.attachment_listeners:  # whether it found attachments is not known
            listener()

    def _load_statuses(self) -> None:
        """Read the vault's task statuses and, when they differ from those the cache's task
        rows were labelled with (the file changed while no watcher ran), re-label the rows."""
        self.statuses, self.statuses_problem = read_status_registry(self.vault.root)
        if self.statuses_problem:
            log.warning("task statuses: plugin defaults used", problem=self.statuses_problem)
        with self.engine.begin() as conn:
            if write.get_state(conn, task_rows.STATUSES_KEY) == self.statuses.digest:
                return
            if task_rows.relabel_tasks(conn, self.statuses):
                _bump_version(conn)
            write.set_state(conn, task_rows.STATUSES_KEY, self.statuses.digest)

    def _ensure_statistics(self) -> None:
        """A vault big enough to have had a big pass, whose cache still has no planner
        statistics (made before big passes ended with them), gets them now, on start, rather
        than at its next big pass (it is cheap next to a pass)."""
        with self.engine.begin() as conn:
            if write.statistics_missing(conn):
                write.refresh_statistics(conn)

    def apply_paths(self, paths: Iterable[str]) -> IndexReport:
        """Apply what happened to these vault-relative paths (files or whole folders)."""
        with self._lock:
            return self._apply_paths(paths)

    def apply_paths_together(self, paths: Iterable[str]) -> None:
        """`apply_paths`, in one pass with the other callers waiting meanwhile (group commit).

        Under many concurrent writes each would otherwise wait for every pass queued before it,
        one note each; here the caller that gets the lock applies everyone's paths at once, so
        a write waits for at most the pass under way and its own. Raises what that pass raised.
        """
        request = _Request(frozenset(paths))
        with self._waiting_lock:
            self._waiting.append(request)
        with self._lock:
            if not request.done:
                with self._waiting_lock:
                    batch, self._waiting = self._waiting, []
                error: BaseException | None = None
                try:
                    self._apply_paths(set().union(*(r.paths for r in batch)))
                except BaseException as exc:
                    error = exc
                for waiting in batch:
                    waiting.error, waiting.done = error, True
        if request.error is not None:
            raise request.error

    def _apply_paths(self, paths: Iterable[str]) -> IndexReport:
        started = time.perf_counter()
        paths = set(paths)
        if self.statuses is None or SETTINGS_FILE in paths:
            self._load_statuses()
        paths.discard(SETTINGS_FILE)
        with self.engine.connect() as conn:
            version = write.get_state(conn, "last_updated")
            if self._resolver is None or version != self._version:
                self._resolver = LinkResolver(write.load_all_paths(conn))
            if self.vault.folds_case:
                paths |= _other_spellings(self.vault, paths, self._resolver)
            stored = write.load_stored_files(conn, under=paths)
        resolver, self._resolver = self._resolver, None  # out of step until this pass is done
        on_disk: dict[str, FileStat] = {}
        scope: set[str] = set()
        for path in paths:
            scope.add(path)
            if self.vault.is_dir(path):
                on_disk.update((s.path, s) for s in self.vault.scan(path))
            elif (found := self.vault.stat(path)) is not None:
                on_disk[found.path] = found  # as spelled on disk, whichever spelling came
            # A folder that vanished takes everything the cache had below it.
            prefix = path + "/"
            scope.update(p for p in stored if p.startswith(prefix))
        scope.update(on_disk)
        plan = _plan(on_disk, stored, scope=scope, full=False)
        plan.version = version
        for removed in plan.removed:
            resolver.remove(removed)
        for present in on_disk:
            resolver.add(present)
        return self._apply(plan, stored, resolver, started, None)

    def _state(self, key: str) -> object:
        with self.engine.connect() as conn:
            return write.get_state(conn, key)

    def _apply(
        self,
        plan: _Plan,
        stored: dict[str, StoredFile],
        resolver: LinkResolver,
        started: float,
        observer: PassObserver | None,
        reparse: bool = False,
    ) -> IndexReport:
        """Write the plan; `resolver` holds every path the cache will hold afterwards."""
        self._resolver = None  # should this pass fail, the next builds it again
        plan.first = plan.complete and (not stored or self._state(FIRST_INDEX_KEY) is True)
        plan.recorded = not plan.first and len(plan.candidates) + len(plan.removed) < BIG_PASS
        report = IndexReport(unchanged=plan.unchanged)
        recovered = self._seal_leftovers()
        written = self._write_batches(plan, stored, resolver, report, observer, reparse)
        version = self._finish(plan, stored, written, resolver, report)
        self._resolver, self._version = (resolver, version) if version is not None else (None, None)
        report.seconds = time.perf_counter() - started
        if report.changed or report.errors:
            (log.info if observer is None else log.debug)("index applied", **report.summary())
        self.bus.publish([*recovered, *report.events])
        if plan.attachments or any(not is_note_path(p) for p in plan.removed):
            for listener in self.attachment_listeners:
                listener()
        return report

    def _seal_leftovers(self) -> list[VaultEvent]:
        """Events of a pass that died after writing notes but before ending are sealed as
        they are, before this pass writes its own (`cache.feed`)."""
        with self.engine.connect() as conn:
            sealed = feed.seal_leftovers(conn)
            if sealed:
                conn.commit()
                log.warning("events of an interrupted pass recovered", count=len(sealed))
        return sealed

    def _write_batches(
        self,
        plan: _Plan,
        stored: dict[str, StoredFile],
        resolver: LinkResolver,
        report: IndexReport,
        observer: PassObserver | None,
        reparse: bool,
    ) -> list[Written]:
        """Read, parse and write the candidates, a transaction per `WRITE_BATCH` notes.

        Each chunk is written as soon as it is parsed, not once a whole batch of them is in:
        on a big pass the writer then starts with the parse workers' first chunk rather than
        their eighth, and has one chunk left to write after their last, not a batch."""
        if not plan.candidates:
            return []
        written: list[Written] = []
        work = [(s, stored.get(s.path)) for s in plan.candidates]
        done = 0
        if observer:
            observer.notes_read(0, len(work))
        # A big pass writes with a bigger cache and fewer checkpoints (`db.bulk_writes`); a big
        # first index also builds the link and tag indexes once, at the end (`cache.bulk`).
        big = len(work) >= BIG_PASS
        first_load = big and plan.complete and not stored
        with (
            self.engine.connect() as conn,
            bulk_writes(conn) if big else nullcontext(),
            indexes_deferred(conn) if first_load else nullcontext(),
        ):
            # Each commit flushes FTS5's pending terms into a new segment: not one per chunk.
            transaction: RootTransaction | None = None
            in_transaction, announced = 0, False
            for chunk in read_notes(self.vault, work, reparse, self.parse_workers):
                report.unchanged += chunk.unchanged
                plan.removed.extend(chunk.vanished)
                done += chunk.files
                if transaction is None:
                    transaction, announced = conn.begin(), False
                if (chunk.records or chunk.touched) and not announced:
                    _announce(conn, plan)
                    announced = True
                written += _write_chunk(
                    conn, chunk, plan, stored, resolver, report, observer, self.statuses
                )
                in_transaction += len(chunk.records) + len(chunk.touched)
                if in_transaction >= WRITE_BATCH:
                    transaction.commit()
                    transaction, in_transaction = None, 0
                if observer:
                    observer.notes_read(done, len(work))
            if transaction is not None:
                transaction.commit()
        if big:  # after the deferred indexes are back: ANALYZE describes the indexes it finds
            with self.engine.begin() as conn:
                write.refresh_statistics(conn)
        return written

    def _finish(
        self,
        plan: _Plan,
        stored: dict[str, StoredFile],
        written: list[Written],
        resolver: LinkResolver,
        report: IndexReport,
    ) -> object:
        """Removals, attachments, link re-resolution and events, in one transaction.

        Returns the cache's version afterwards, or None when another process wrote to the cache
        during this pass (so that the resolver is not trusted to match it)."""
        removed_notes = [p for p in plan.removed if p in stored and is_note_path(p)]
        new_paths = [r.path for r in written if r.path not in stored]
        new_paths += [a.path for a in plan.attachments if a.path not in stored]
        gone = [p for p in plan.removed if p in stored]
        for path in plan.removed:  # with the notes that vanished between the walk and the read
            resolver.remove(path)
        keys = {path_key(p) for p in (*new_paths, *gone)}
        sources = {r.path for r in written}
        # Only links from notes this pass did not write can need resolving again: after a
        # first index or a `--full` one there are none, and looking would read every link.
        others = not plan.complete or any(p not in sources for p in stored if is_indexed_path(p))
        # A first index finds notes: nobody added them.
        report.events = _events(written, stored, removed_notes, initial=plan.first)
        with self.engine.begin() as conn:
            feed.record_final(conn, report.events)
            if not plan.recorded and (gone or plan.attachments):
                changes.forget(conn, plan.version)
            write.delete_files(conn, gone)
            write.upsert_attachments(conn, plan.attachments)
            relinked = write.reresolve_links(conn, keys, resolver, sources) if others else []
            report.relinked = len(relinked)
            if plan.recorded:
                changes.record(conn, {*removed_notes, *relinked})
            version = previous = write.get_state(conn, "last_updated")
            if written or gone or plan.attachments or relinked or plan.touched:
                # Strictly increasing, even for two passes in one millisecond: readers use it
                # as the version of the cache (the graph tools cache their adjacency by it).
                version = max(_now_ms(), previous + 1 if isinstance(previous, int) else 0)
                write.set_state(conn, "last_updated", version)
                if plan.recorded:
                    changes.stamp(conn, version, previous)
            if plan.first:
                write.set_state(conn, FIRST_INDEX_KEY, False)
        report.added = sum(isinstance(e, NoteAdded) for e in report.events)
        report.updated = sum(isinstance(e, NoteModified) for e in report.events)
        report.removed = sum(isinstance(e, NoteDeleted) for e in report.events)
        report.moved = sum(isinstance(e, NoteMoved) for e in report.events)
        return version if previous == plan.version else None


def serve_pass_apart() -> None:
    """The child process of `weaver.index.apart`: a reconcile on the parent's cache and vault."""
    serve_pass(_reconcile_apart)


def _reconcile_apart(passes: ApartPasses, vault: Vault, parse_workers: int, full: bool) -> object:
    db = open_engine(passes.db_url)
    try:
        return Indexer(db, vault, parse_workers=parse_workers).reconcile(full)
    finally:
        db.dispose()


def _announce(conn: Connection, plan: _Plan) -> None:
    """Once in each transaction that writes notes: a first index marks itself under way, and a
    pass that records nothing tells readers to rebuild (again: another process's pass may have
    recorded a version since this pass's last transaction)."""
    if plan.first:
        write.set_state(conn, FIRST_INDEX_KEY, True)
    if not plan.recorded:
        changes.forget(conn, plan.version)


def _write_chunk(
    conn: Connection,
    chunk: ReadChunk,
    plan: _Plan,
    stored: dict[str, StoredFile],
    resolver: LinkResolver,
    report: IndexReport,
    observer: PassObserver | None,
    statuses: StatusRegistry | None,
) -> list[Written]:
    """In the caller's transaction (`_announce`d): the chunk's notes (re)written and, by a
    pass that records them, recorded as changed; its touched notes' stat updated."""
    for record in chunk.records:
        if record.error:
            report.errors += 1
            if observer:
                observer.note_failed(record.path, record.error)
            else:
                log.warning("note indexed with error", path=record.path, error=record.error)
    if plan.recorded:  # a touched note's row changed too: its `file.mtime` in a base
        changes.record(conn, [r.path for r in chunk.records] + [s.path for s in chunk.touched])
    plan.touched += len(chunk.touched)
    # Provisional: replaced by the pass's final events (with moves paired) when it ends.
    feed.record_provisional(conn, _events(chunk.records, stored, (), initial=plan.first))
    write.replace_notes(conn, chunk.records, resolver, stored, statuses)
    write.touch_notes(conn, chunk.touched)
    return [Written(r.path, r.content_hash) for r in chunk.records]


def _plan(
    on_disk: dict[str, FileStat],
    stored: dict[str, StoredFile],
    scope: set[str] | None,
    full: bool,
) -> _Plan:
    plan = _Plan()
    for path, file_stat in on_disk.items():
        previous = stored.get(path)
        same_stat = (
            previous is not None
            and previous.size == file_stat.size
            and previous.mtime_ns == file_stat.mtime_ns
        )
        if not file_stat.is_indexed:
            if not same_stat:
                plan.attachments.append(file_stat)
        elif same_stat and not full:
            plan.unchanged += 1
        else:
            plan.candidates.append(file_stat)
    in_scope = stored.keys() if scope is None else scope & stored.keys()
    plan.removed = sorted(p for p in in_scope if p not in on_disk)
    plan.candidates.sort(key=lambda s: s.path)
    return plan


def _events(
    written: Sequence[Written | NoteRecord],
    stored: dict[str, StoredFile],
    removed: Sequence[str],
    initial: bool = False,
) -> list[VaultEvent]:
    """Adds, edits, deletes; an add and a delete of the same content in one batch is a move.
    `initial`: the adds are a first index's (`NoteAdded.initial`)."""
    removed_by_hash: dict[str, list[str]] = {}
    for path in removed:
        digest = stored[path].content_hash
        if digest:
            removed_by_hash.setdefault(digest, []).append(path)
    events: list[VaultEvent] = []
    moved_from: set[str] = set()
    for record in written:
        if not is_note_path(record.path):
            continue  # a canvas: note events start workflows and name notes to clients
        if record.path in stored:
            if stored[record.path].content_hash != record.content_hash:
                events.append(NoteModified(record.path))
        elif candidates := removed_by_hash.get(record.content_hash):
            old = candidates.pop(0)
            moved_from.add(old)
            events.append(NoteMoved(old_path=old, path=record.path))
        else:
            events.append(NoteAdded(record.path, initial=initial))
    events.extend(NoteDeleted(p) for p in removed if p not in moved_from)
    return events


def _other_spellings(vault: Vault, paths: Iterable[str], resolver: LinkResolver) -> set[str]:
    """Where the file system folds case, the cache's paths that name the same files and
    folders as `paths` in another case: a rename of `Note.md` to `note.md` may be reported
    under either name alone, and the pass must see both to make it a move."""
    found: set[str] = set()
    for path in paths:
        found |= resolver.spellings(path, folder=vault.is_dir(path))
        found.add(vault.spelled(path))
    return found


def _bump_version(conn: Connection) -> None:
    """A change outside a pass (task rows re-labelled): readers holding the cache's version
    must build afresh."""
    previous = write.get_state(conn, "last_updated")
    changes.forget(conn, previous)
    write.set_state(
        conn, "last_updated", max(_now_ms(), previous + 1 if isinstance(previous, int) else 0)
    )


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
