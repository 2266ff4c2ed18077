"""`weaver audit`: which client made each write, as a table and as JSON, with its filters; the
command line's own writes are audited as `cli` under the command's name. In process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import write_files
from weaver.cli import main


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", {"a.md": "#proj here\n", "b/c.md": "#proj too\n"})


def test_the_commands_writes_are_listed_by_client_note_and_edit(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(vault), "tags", "rename", "proj", "work"]) == 0
    assert main(["--vault", str(vault), "undo", "a.md"]) == 0
    capsys.readouterr()
    assert main(["--vault", str(vault), "audit"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["WHEN", "(UTC)", "CLIENT", "TOOL", "NOTE", "EDIT", "OUTCOME"]
    rows = [line.split("  ") for line in lines[1:]]
    cells = [[cell.strip() for cell in row if cell.strip()] for row in rows]
    assert [c[1:] for c in cells] == [
        ["cli", "weaver undo", "a.md", "2", "written"],
        ["cli", "weaver tags rename", "b/c.md", "1", "written"],
        ["cli", "weaver tags rename", "a.md", "1", "written"],
    ]


def test_json_and_filters(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--vault", str(vault), "tags", "rename", "proj", "work"]) == 0
    capsys.readouterr()
    assert main(["--vault", str(vault), "audit", "--note", "b/", "--since", "1h", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert page["total"] == 1
    [entry] = page["entries"]
    assert {k: entry[k] for k in ("caller_kind", "client_id", "tool", "path", "outcome")} == {
        "caller_kind": "cli",
        "client_id": "cli",
        "tool": "weaver tags rename",
        "path": "b/c.md",
        "outcome": "written",
    }
    assert main(["--vault", str(vault), "audit", "--client", "Phone assistant"]) == 0
    assert capsys.readouterr().out.strip() == "No writes recorded."
    assert main(["--vault", str(vault), "audit", "--limit", "1"]) == 0
    assert "... 1 more (--offset 1)" in capsys.readouterr().out


def test_a_since_it_cannot_read_is_named(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--vault", str(vault), "audit", "--since", "last week"]) == 1
    assert "since: cannot read 'last week'" in capsys.readouterr().err
