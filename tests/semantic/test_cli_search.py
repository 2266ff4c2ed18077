"""`weaver search`: the search_notes modes from a shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import write_files
from tests.semantic.conftest import require_semantic
from weaver.cli import main

NOTES = {
    "sync.md": "# Obsidian Sync\nKeeps the vault the same on the mobile app and the desktop.\n",
    "bread.md": "# Sourdough\nA lively starter, flour, water and salt, then a long proof.\n",
}


def search(vault: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["--vault", str(vault), "search", *args, "--json"]) == 0
    answer: dict[str, object] = json.loads(capsys.readouterr().out)
    return answer


def test_update_then_search_by_meaning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_semantic()
    vault = write_files(tmp_path / "vault", NOTES)
    # Hybrid admits a note by meaning from a calibrated similarity up: this question is well
    # above it, where "keeping my phone and laptop in step" (0.29) is under it.
    query = "how do I keep my notes in sync between phone and laptop"
    answer = search(vault, capsys, query, "--update")
    assert answer["mode"] == "hybrid"  # every note embedded by --update
    assert answer["coverage"] == "embedded 2 of 2 notes"
    results = answer["results"]
    assert isinstance(results, list) and results[0]["path"] == "sync.md"
    keyword = search(vault, capsys, "sourdough", "--mode", "keyword")
    assert keyword["mode"] == "keyword"
    assert [r["path"] for r in keyword["results"]] == ["bread.md"]  # type: ignore[attr-defined]


def test_a_partial_answer_says_how_to_embed_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_semantic()
    vault = write_files(tmp_path / "vault", NOTES)
    assert main(["--vault", str(vault), "index"]) == 0  # indexed, not embedded
    capsys.readouterr()
    assert main(["--vault", str(vault), "search", "phone and laptop", "--mode", "semantic"]) == 0
    out = capsys.readouterr().out
    assert "embedded 0 of 2 notes; results cover the embedded notes only" in out
    assert "`--update` embeds the rest first" in out


def test_the_tag_filter_is_read_as_the_tools_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = write_files(tmp_path / "vault", {**NOTES, "tagged.md": "#Bread/Rye sourdough\n"})
    answer = search(vault, capsys, "sourdough", "--mode", "keyword", "--tag", " #bread ")
    assert [r["path"] for r in answer["results"]] == ["tagged.md"]  # type: ignore[attr-defined]
