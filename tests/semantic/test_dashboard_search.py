"""The dashboard's search page searches by meaning, with the same core as `search_notes`."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboard.server import Served, serve_dashboard
from tests.helpers import write_files
from tests.semantic.test_semantic_tools import NOTES
from weaver.semantic.search import SemanticIndex
from weaver.semantic.worker import embed_pending

QUERY = "how do I keep my notes in sync between phone and laptop"


@pytest.fixture
def served(tmp_path: Path, semantic_index: SemanticIndex) -> Iterator[Served]:
    with serve_dashboard(write_files(tmp_path / "vault", NOTES), builtins=False) as server:
        server.app.semantic = semantic_index
        embed_pending(server.app.db, semantic_index)
        yield server


def hit_paths(body: str) -> list[str]:
    return [html.unescape(p) for p in _HIT.findall(body)]


_HIT = re.compile(r'<a class="note-link" href="/notes/([^"]+)"')


def test_search_by_meaning_finds_what_words_miss(served: Served) -> None:
    by_words = served.get(f"/search?q={QUERY.replace(' ', '+')}&mode=keyword")
    assert "0 notes match" in by_words.body
    by_meaning = served.get(f"/search?q={QUERY.replace(' ', '+')}&mode=semantic")
    assert by_meaning.status == 200
    assert hit_paths(by_meaning.body)[0] == "apps/sync.md"
    assert "embedded 6 of 6 notes" in by_meaning.body
    assert '<option value="semantic" selected>' in by_meaning.body


def test_the_default_mode_is_hybrid_once_every_note_is_embedded(served: Served) -> None:
    page = served.get("/search?q=sourdough+starter")
    assert '<option value="hybrid" selected>' in page.body
    assert hit_paths(page.body)[0] == "kitchen/bread.md"
