"""`weaver tags list` and `weaver tags rename OLD NEW [--dry-run]`, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import write_files
from weaver.cli import main


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_files(
        tmp_path / "vault",
        {
            "a.md": "---\ntags: [proj/x]\n---\n#proj here\n",
            "b.md": "`#proj` in code, #Proj in text\n",
            "c.md": "#other\n",
        },
    )


def test_tags_list(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--vault", str(vault), "tags", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["tag", "notes", "own"]
    assert ["#Proj", "2", "2"] in [line.split() for line in out]
    assert main(["--vault", str(vault), "tags", "list", "--json"]) == 0
    listed = {t["tag"]: t["notes"] for t in json.loads(capsys.readouterr().out)}
    assert listed == {"other": 1, "Proj": 2, "proj/x": 1}  # a spelling in use


def test_tags_rename_dry_run_then_for_real(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (vault / "b.md").read_text()
    assert main(["--vault", str(vault), "tags", "rename", "#proj", "Work", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "a.md:2: tags: [proj/x]  ->  tags: [Work/x]" in out
    assert "would change 2 notes" in out and (vault / "b.md").read_text() == before
    assert main(["--vault", str(vault), "tags", "rename", "proj", "Work"]) == 0
    assert "2 notes written" in capsys.readouterr().out
    assert (vault / "b.md").read_text() == "`#proj` in code, #Work in text\n"
    assert main(["--vault", str(vault), "tags", "rename", "proj", "two words"]) == 1
    assert "not a valid tag" in capsys.readouterr().err
