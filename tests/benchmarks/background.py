"""Background: what `weaver daemon` costs while nothing happens, on the reference vault.

The daemon runs as in production (HTTP, the dashboard, the workflow engine and its scheduler,
the semantic worker), is left to finish its work (the index, the workflows the index started,
the embeddings), then watched over a window with nothing to do: 5 minutes at the reference
size, 30 s with --quick. The figures, each beside its floor:

- idle CPU: the daemon's CPU ticks (utime + stime of all its threads, from /proc/<pid>/stat)
  over the window, as a share of one core. Ticks, not wall-clock timings: the machine may be
  busy with other work, which makes timings slow but adds no ticks to this process;
- RSS at rest with the semantic extra: the same daemon's resident set once it has let the
  embedding model go (`semantic.worker.RELEASE_AFTER_S` without a search or a pass: the
  bench waits for its log line; not with --quick), the RSS before that shown beside it;
- RSS at rest without it: a second daemon with `semantic = false`, once settled, on the cache
  the first one built (a warm restart);
- RSS at rest right after a first index: a third such daemon on an empty cache of its own, so
  that it indexes every note, and the workflows that index starts run, before it settles.

Settled means `SETTLE_WINDOWS` windows of `SETTLE_S` in a row below `SETTLE_SHARE` of a core.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target
from tests.benchmarks.worker import clean_env, rss_mb
from weaver.semantic.worker import POLL_SECONDS, RELEASE_AFTER_S

SECTION = "background"
IDLE_TARGET = Target("<=", 0.2, "≤ 0.2 % of a core")
RSS_TARGET = Target("<=", 150.0, "≤ 150 MB")
RSS_SEMANTIC_TARGET = Target("<=", 250.0, "≤ 250 MB")
WINDOW_S = 300.0
QUICK_WINDOW_S = 30.0
SETTLE_S = 5.0
SETTLE_WINDOWS = 3
SETTLE_SHARE = 0.01  # 1 % of a core: the index, workflows and embeddings are over
SETTLE_GIVE_UP_S = 1800.0
RELEASED = "embedding model unloaded while idle"  # the worker's log line
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int:
    """utime + stime of the process, all its threads included, in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rpartition(")")[2].split()  # the name, in parentheses, may hold spaces
    return int(fields[11]) + int(fields[12])


def core_share(pid: int, seconds: float) -> tuple[float, int]:
    """(share of one core, ticks) the process used over the next `seconds`."""
    before = cpu_ticks(pid)
    time.sleep(seconds)
    ticks = cpu_ticks(pid) - before
    return ticks / TICKS_PER_S / seconds, ticks


def settle(pid: int) -> float:
    """Wait until the daemon's work is done; how long that took, in seconds."""
    started = time.monotonic()
    quiet = 0
    while quiet < SETTLE_WINDOWS:
        if time.monotonic() - started > SETTLE_GIVE_UP_S:
            raise RuntimeError(f"weaver daemon still busy after {SETTLE_GIVE_UP_S:.0f} s")
        share, _ = core_share(pid, SETTLE_S)
        quiet = quiet + 1 if share < SETTLE_SHARE else 0
    return time.monotonic() - started


def run(ctx: BenchContext) -> list[Figure]:
    vault = ctx.vault(ctx.reference)
    window = QUICK_WINDOW_S if ctx.quick else WINDOW_S
    notes = f"{ctx.reference:,} notes"
    with running_daemon(vault, ctx.workdir, semantic=True) as (pid, log):
        settled = settle(pid)
        share, ticks = core_share(pid, window)
        rss_loaded = rss_mb(pid)[0]
        if not ctx.quick:  # ten minutes more: a smoke run reads it with the model loaded
            _wait_for_log(log, RELEASED, RELEASE_AFTER_S + 2 * POLL_SECONDS)
        rss_semantic = rss_mb(pid)[0]
    with running_daemon(vault, ctx.workdir, semantic=False) as (pid, _log):
        settle(pid)
        rss_plain = rss_mb(pid)[0]
    cold_cache = ctx.workdir / "background-first-index.db"
    cold_cache.unlink(missing_ok=True)
    with running_daemon(vault, ctx.workdir, semantic=False, cache=cold_cache) as (pid, _log):
        settle(pid)
        rss_cold, rss_cold_peak = rss_mb(pid)
    for leftover in cold_cache.parent.glob(cold_cache.name + "*"):  # with its -wal and -shm
        leftover.unlink()
    percent = share * 100
    before = "model loaded" if ctx.quick else f"{rss_loaded:.0f} MB before it let the model go"
    return [
        Figure(
            SECTION,
            f"idle CPU, `weaver daemon` (HTTP, dashboard, semantic), {notes}",
            percent,
            "%",
            f"{percent:.3f} % of a core ({ticks} ticks in {window:.0f} s)",
            IDLE_TARGET,
            {"ticks": ticks, "window_s": window, "settled_after_s": round(settled, 1)},
        ),
        Figure(
            SECTION,
            f"RSS at rest, without the semantic extra, {notes}",
            rss_plain,
            "MB",
            f"{rss_plain:.0f} MB",
            RSS_TARGET,
        ),
        Figure(
            SECTION,
            f"RSS at rest after a first index, without the semantic extra, {notes}",
            rss_cold,
            "MB",
            f"{rss_cold:.0f} MB (peak {rss_cold_peak:.0f} MB)",
            RSS_TARGET,
        ),
        Figure(
            SECTION,
            f"RSS at rest, with the semantic extra, {notes}",
            rss_semantic,
            "MB",
            f"{rss_semantic:.0f} MB ({before})",
            RSS_SEMANTIC_TARGET,
        ),
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_daemon(
    vault: Path, workdir: Path, semantic: bool, cache: Path | None = None
) -> Iterator[tuple[int, Callable[[], str]]]:
    """`weaver daemon` on `vault` with HTTP and the dashboard on a free loopback port, watching;
    yields its pid and a reader of its log, stops it after. `cache`: a SQLite cache file of its
    own rather than the vault's."""
    weaver = Path(sys.executable).with_name("weaver")
    name = ("semantic" if semantic else "plain") + ("-first-index" if cache else "")
    log_path = workdir / f"background-daemon-{name}.log"
    env = {
        **clean_env(),
        "WEAVER_LOG_FORMAT": "json",
        "WEAVER_HTTP_PORT": str(free_port()),
        "WEAVER_SEMANTIC": "true" if semantic else "false",
        **({"WEAVER_DATABASE_URL": f"sqlite:///{cache}"} if cache else {}),
    }
    command = [str(weaver), "--vault", str(vault), "--log-level", "info", "daemon"]
    with log_path.open("w") as log:
        proc = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log)

    def log_text() -> str:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"weaver daemon exited:\n{tail}")
        return log_path.read_text(errors="replace")

    try:
        _wait_for_log(log_text, "watching vault", SETTLE_GIVE_UP_S)
        yield proc.pid, log_text
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for_log(log: Callable[[], str], text: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while text not in log():
        if time.monotonic() > deadline:
            raise RuntimeError(f"weaver daemon did not log {text!r} within {seconds:.0f} s")
        time.sleep(0.5)
