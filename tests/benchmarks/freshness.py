"""Freshness: with a real `weaver daemon` watching the vault, how long from writing a note until
a query of the cache sees the change.

The daemon is a separate process, as in production, so this driver's polling never competes
with the watcher for the GIL. Each trial times from just before the file operation to the first
read of the cache (a fresh read transaction every millisecond) that shows it. Kinds of change:
modify (a new content hash), create, rename (new path present, old gone), delete.
"""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, latency_figure
from tests.benchmarks.worker import clean_env, rss_mb

TARGET = Target("<=", 300, "p95 ≤ 300 ms")
KINDS = ("modify", "create", "rename", "delete")
POLL_SECONDS = 0.001
GIVE_UP_SECONDS = 5.0  # a change not visible by then is a failure of the bench run
PAUSE_SECONDS = 0.1  # between trials: longer than the debounce, so no two trials share a batch
Check = Callable[[sqlite3.Connection], bool]


def run(ctx: BenchContext) -> list[Figure]:
    vault = ctx.vault(ctx.reference)
    facts = ctx.facts(ctx.reference)
    samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
    with running_daemon(vault, ctx.workdir) as pid, closing(_reader(vault)) as db:
        try:
            for i in range(ctx.trials):
                note = facts.sample[i % len(facts.sample)]
                for kind, seconds in _trial(vault, db, note, i):
                    samples[kind].append(seconds)
        except TimeoutError as exc:
            tail = (ctx.workdir / "daemon.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{exc}; the daemon's log ends:\n{tail}") from exc
        rss, peak = rss_mb(pid)
    figures = [
        latency_figure("freshness", f"{kind}, {ctx.reference:,} notes", samples[kind], TARGET)
        for kind in KINDS
    ]
    figures.append(
        Figure(
            "memory and size",
            f"peak RSS, `weaver daemon` on {ctx.reference:,} notes",
            peak,
            "MB",
            f"{peak:.0f} MB (now {rss:.0f} MB)",
        )
    )
    return figures


def _trial(vault: Path, db: sqlite3.Connection, note: str, i: int) -> Iterator[tuple[str, float]]:
    """One change of each kind; yields (kind, seconds until visible)."""
    folder = note.rpartition("/")[0]
    prefix = f"{folder}/" if folder else ""
    original = (vault / note).read_bytes()
    edited = original + f"\n\nEdited in trial {i}: #bench/fresh [[{note[:-3]}]]\n".encode()
    digest = hashlib.sha256(edited).hexdigest()
    yield (
        "modify",
        _timed(db, lambda: (vault / note).write_bytes(edited), lambda c: _hash(c, note) == digest),
    )
    created = f"{prefix}Fresh note {i}.md"
    body = f"---\ntype: note\ntags: [bench]\n---\n# Fresh {i}\n\nLinks to [[{note[:-3]}]].\n" * 8
    yield (
        "create",
        _timed(
            db,
            lambda: (vault / created).write_text(body, encoding="utf-8"),
            lambda c: _hash(c, created) is not None,
        ),
    )
    renamed = f"{prefix}Renamed note {i}.md"
    yield (
        "rename",
        _timed(
            db,
            lambda: (vault / created).rename(vault / renamed),
            lambda c: _hash(c, renamed) is not None and _hash(c, created) is None,
        ),
    )
    yield (
        "delete",
        _timed(db, lambda: (vault / renamed).unlink(), lambda c: _hash(c, renamed) is None),
    )
    restored = hashlib.sha256(original).hexdigest()  # put the note back, and wait for that too
    _timed(db, lambda: (vault / note).write_bytes(original), lambda c: _hash(c, note) == restored)


def _timed(db: sqlite3.Connection, change: Callable[[], object], visible: Check) -> float:
    time.sleep(PAUSE_SECONDS)
    started = time.perf_counter()
    change()
    while not visible(db):
        if time.perf_counter() - started > GIVE_UP_SECONDS:
            raise TimeoutError(f"a change was not visible after {GIVE_UP_SECONDS:.0f} s")
        time.sleep(POLL_SECONDS)
    return time.perf_counter() - started


def _hash(db: sqlite3.Connection, path: str) -> str | None:
    row = db.execute("SELECT content_hash FROM notes WHERE path = ?", (path,)).fetchone()
    return None if row is None else str(row[0])


def _reader(vault: Path) -> sqlite3.Connection:
    """A read-only connection in autocommit mode: every SELECT sees the latest commit."""
    uri = f"file:{vault / '.weaver' / 'cache.db'}?mode=ro"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


@contextmanager
def running_daemon(vault: Path, workdir: Path) -> Iterator[int]:
    """`weaver daemon` on `vault`, started and watching; yields its pid, stops it after."""
    weaver = Path(sys.executable).with_name("weaver")
    log_path = workdir / "daemon.log"
    env = {**clean_env(), "WEAVER_LOG_FORMAT": "json"}
    command = [str(weaver), "--vault", str(vault), "--log-level", "info", "daemon"]
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log)
    try:
        _wait_for_log(proc, log_path, "watching vault")
        time.sleep(0.5)  # let inotify finish adding its watches on every folder
        yield proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for_log(proc: subprocess.Popen[bytes], log_path: Path, text: str) -> None:
    deadline = time.monotonic() + 300
    while text not in log_path.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"weaver daemon did not start watching:\n{tail}")
        time.sleep(0.05)
