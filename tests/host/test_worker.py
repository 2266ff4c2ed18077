"""`weaver worker`: PostgreSQL only, and the command line that starts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from weaver.cli import build_parser
from weaver.config import Settings
from weaver.errors import ConfigError
from weaver.host.worker import run_worker


def test_a_worker_on_sqlite_refuses_and_says_why(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"needs database_url = 'postgresql\+psycopg"):
        run_worker(Settings(vault=tmp_path))


def test_the_worker_and_standby_options_parse() -> None:
    parser = build_parser()
    worker = parser.parse_args(["worker", "--concurrency", "3"])
    assert worker.concurrency == 3
    assert parser.parse_args(["daemon", "--standby"]).standby
    assert not parser.parse_args(["daemon"]).standby
