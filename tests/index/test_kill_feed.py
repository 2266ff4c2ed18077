"""kill -9 during a first index: whenever it lands, the change feed ends up with exactly one
`initial` add per note once the next pass has run (none lost with the killed pass, none twice)."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import write_files
from weaver.cache import feed
from weaver.config import Settings
from weaver.runtime.app import open_app
from weaver.vault.events import NoteAdded

pytestmark = pytest.mark.slow
NOTES = 3000


def notes_in(cache: Path) -> int:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as db:
            return int(db.execute("SELECT count(*) FROM notes").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_kill_9_mid_index_loses_no_event_and_repeats_none(tmp_path: Path) -> None:
    vault = write_files(
        tmp_path / "vault",
        {f"f{i % 30}/n{i}.md": f"# Note {i}\nlinks [[n{i + 1}]] #t{i % 7}\n" for i in range(NOTES)},
    )
    config = tmp_path / "weaver.toml"
    config.write_text(f'vault = "{vault}"\nlog_level = "error"\n', encoding="utf-8")
    index = subprocess.Popen(
        [sys.executable, "-m", "weaver", "--config", str(config), "index"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Killed as soon as its first transaction of notes is in: the pass is under way.
    cache = vault / ".weaver" / "cache.db"
    deadline = time.monotonic() + 60
    while notes_in(cache) == 0 and index.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    index.send_signal(signal.SIGKILL)
    index.wait(timeout=30)
    app = open_app(Settings(vault=vault))
    try:
        app.indexer.reconcile()
        with app.db.connect() as conn:
            events = [entry.event for entry in feed.read_after(conn, 0, 10 * NOTES)]
    finally:
        app.close()
    adds = Counter(event.path for event in events if isinstance(event, NoteAdded))
    assert len(adds) == NOTES and set(adds.values()) == {1}
    assert all(isinstance(e, NoteAdded) and e.initial for e in events)
