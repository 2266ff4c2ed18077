"""`weaver edits PATH` and `weaver undo PATH [--edit ID]`, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import write_files
from weaver.cli import main


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", {"a.md": "#proj here\n", "b.md": "plain\n"})


def test_a_rename_is_listed_and_undone_from_the_shell(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(vault), "tags", "rename", "proj", "work"]) == 0
    assert (vault / "a.md").read_text() == "#work here\n"
    capsys.readouterr()
    assert main(["--vault", str(vault), "edits", "a.md", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["operation"] for e in listed["edits"]] == ["rename_tag"]
    assert listed["edits"][0]["current"]
    assert main(["--vault", str(vault), "undo", "a.md"]) == 0
    assert "edit 1 undone" in capsys.readouterr().out
    assert (vault / "a.md").read_text() == "#proj here\n"
    assert main(["--vault", str(vault), "edits", "a.md"]) == 0
    out = capsys.readouterr().out
    assert "2 edit(s) by Weaver" in out and "restore_edit  (current)" in out


def test_undo_refuses_to_throw_away_a_later_save(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(vault), "tags", "rename", "proj", "work"]) == 0
    (vault / "a.md").write_text("#work here, and my own words\n")
    assert main(["--vault", str(vault), "undo", "a.md", "--edit", "1"]) == 1
    assert "has changed since edit 1" in capsys.readouterr().err
    assert (vault / "a.md").read_text() == "#work here, and my own words\n"


def test_undo_of_a_note_without_edits_says_so(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(vault), "undo", "b.md"]) == 1
    assert "'b.md' has no edit by Weaver to undo" in capsys.readouterr().err
