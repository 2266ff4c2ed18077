"""`weaver base`, in process: a view printed as a table under its display names, grouped, with
its summaries; --json gives what query_base answers; a base Weaver cannot evaluate is a usage
error naming the expression."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import write_files
from tests.mcp_server.test_base_tools import FILES
from weaver.cli import main
from weaver.config import Settings
from weaver.runtime.app import open_app


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = write_files(tmp_path / "vault", FILES)
    app = open_app(Settings(vault=root))
    try:
        app.indexer.reconcile()
    finally:
        app.close()
    return root


def test_the_first_view_prints_as_a_table(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--vault", str(vault), "base", "Library.base"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Library.base: view 'By rating' (table)"
    assert "Author" in out[1].split()
    assert out[2].split()[:3] == ["Dune.md", "Herbert", "5"]
    assert out[4].split()[:2] == ["Hobbit.md", "Tolkien"]
    assert "3 rows (1-3 shown)" in out


def test_a_grouped_view_prints_each_group_under_its_heading(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(vault), "base", "Library.base", "--view", "By status"]) == 0
    out = capsys.readouterr().out
    assert out.index("== read (1)") < out.index("Dune") < out.index("== reading (1)")
    assert out.index("== reading (1)") < out.index("Emma") < out.index("== unread (1)")


def test_json_is_what_query_base_answers(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--vault", str(vault), "base", "Home.md", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["view"] == "Good" and answer["block"] == 0
    assert sorted(r["path"] for r in answer["rows"]) == ["Books/Dune.md", "Books/Emma.md"]


def test_an_expression_it_cannot_evaluate_is_a_usage_error(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(vault), "base", "Library.base", "--view", "Broken"]) == 2
    assert "rating.lower()" in capsys.readouterr().err
