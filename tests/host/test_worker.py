"""`weaver worker`: PostgreSQL only, and the command line that starts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import write_files
from weaver.cli import build_parser, main
from weaver.config import Settings
from weaver.errors import ConfigError, NoFilesError
from weaver.host.job_worker import run_worker
from weaver.runtime.app import App, open_app


def test_a_worker_on_sqlite_refuses_and_says_why(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"needs database_url = 'postgresql\+psycopg"):
        run_worker(Settings(vault=tmp_path))


def test_the_worker_and_standby_options_parse() -> None:
    parser = build_parser()
    worker = parser.parse_args(["worker", "--concurrency", "3"])
    assert worker.concurrency == 3
    assert parser.parse_args(["daemon", "--standby"]).standby
    assert not parser.parse_args(["daemon"]).standby


def test_a_worker_away_from_the_files_reads_notes_from_the_database(
    pg_app: App, tmp_path: Path
) -> None:
    """A worker on another host has the database, not the vault's folder: the note text
    PostgreSQL keeps is what its workflows read, and a write says why it cannot be made."""
    write_files(pg_app.settings.vault, {"a.md": "# Alpha\nbody\n"})
    pg_app.indexer.reconcile()
    away = Settings(vault=tmp_path / "not-here", database_url=pg_app.settings.db_url)
    worker_app = open_app(away)
    try:
        assert worker_app.vault.read_note("a.md").decode() == "# Alpha\nbody\n"
        with pytest.raises(NoFilesError, match="this worker has none of the vault's files"):
            worker_app.vault.note_file("a.md")
    finally:
        worker_app.close()


def test_the_command_line_lets_a_worker_run_without_the_vaults_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    started: list[Settings] = []
    monkeypatch.setattr(
        "weaver.host.job_worker.run_worker", lambda s, concurrency: started.append(s)
    )
    url = "postgresql+psycopg://weaver@127.0.0.1:1/db"
    assert main(["--vault", str(tmp_path / "elsewhere"), "--db", url, "worker"]) == 0
    assert [s.vault for s in started] == [tmp_path / "elsewhere"]
    # The writer still needs the folder.
    assert main(["--vault", str(tmp_path / "elsewhere"), "--db", url, "index"]) == 2
