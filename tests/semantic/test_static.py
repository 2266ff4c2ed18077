"""The distilled static model's cache: reused, distilled again when the source model file
changes, rebuilt (with a warning saying why) when the cached matrix cannot be used.

The real distillation runs once per session (the `semantic_index` fixture; its matrix is kept
in pytest's cache folder): here `_distil_to` is replaced by a quick stand-in that writes a
known matrix, so each case costs milliseconds instead of tens of seconds, except the one that
checks a failing distiller process is reported."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from tests.helpers import wait_for
from tests.semantic.conftest import require_semantic
from weaver.errors import SemanticUnavailableError
from weaver.semantic import static
from weaver.semantic.model import DEFAULT_MODEL, ModelSource, Vectors, locate_model
from weaver.semantic.search import SemanticIndex
from weaver.semantic.static import (
    STATIC_DIMENSIONS,
    load_static_model,
    read_vectors,
    reduce_vectors,
    write_vectors,
)

VOCAB_SIZE = 30522  # the shipped vocab.txt


@pytest.fixture
def source(tmp_path: Path) -> ModelSource:
    """A copy of the packaged model file, to change without touching the installed one."""
    require_semantic()
    packaged = locate_model()
    copy = tmp_path / "model" / "model.onnx"
    copy.parent.mkdir()
    shutil.copyfile(packaged.onnx_path, copy)
    return ModelSource(DEFAULT_MODEL, copy, packaged.tokenizer_path)


@pytest.fixture
def distilled(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Replace the distiller by one writing a seeded random matrix; the paths it wrote."""
    calls: list[Path] = []

    def fake(path: Path, _source: ModelSource, _threads: int | None, _report: object) -> Vectors:
        calls.append(path)
        rng = np.random.default_rng(len(calls))
        vectors = rng.standard_normal((VOCAB_SIZE, STATIC_DIMENSIONS)).astype(np.float32)
        write_vectors(path, vectors)
        return vectors

    monkeypatch.setattr(static, "_distil_to", fake)
    return calls


def cached_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("static-*.npz"))


def test_the_cached_matrix_is_reused(
    tmp_path: Path, source: ModelSource, distilled: list[Path]
) -> None:
    first = load_static_model(source, tmp_path / "cache", None)
    second = load_static_model(source, tmp_path / "cache", None)
    assert len(distilled) == 1
    assert cached_files(tmp_path / "cache") == distilled
    query = "keep notes in sync"
    assert np.array_equal(first.embed_query(query), second.embed_query(query))


def test_a_changed_source_file_is_distilled_again(
    tmp_path: Path, source: ModelSource, distilled: list[Path]
) -> None:
    load_static_model(source, tmp_path / "cache", None)
    with source.onnx_path.open("ab") as handle:
        handle.write(b"\0")  # another file: another hash
    load_static_model(source, tmp_path / "cache", None)
    assert len(distilled) == 2 and distilled[0] != distilled[1]
    assert len(cached_files(tmp_path / "cache")) == 2


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda path: path.write_bytes(b"garbage"), "cannot be read"),
        (lambda path: path.write_bytes(path.read_bytes()[:1000]), "cannot be read"),
        (lambda path: _rewrite(path, np.ones((3, 4), np.float32), None), "not 30522 float32"),
        (lambda path: _rewrite(path, None, np.zeros(32, np.uint8)), "fails its checksum"),
    ],
    ids=["garbage", "truncated", "wrong shape", "bad checksum"],
)
def test_a_corrupt_cached_matrix_is_named_and_rebuilt(
    tmp_path: Path, source: ModelSource, distilled: list[Path], spoil: object, reason: str
) -> None:
    cache = tmp_path / "cache"
    load_static_model(source, cache, None)
    (path,) = cached_files(cache)
    spoil(path)  # type: ignore[operator]
    with pytest.raises(SemanticUnavailableError, match=reason):
        read_vectors(path, VOCAB_SIZE)
    with capture_logs() as logs:
        load_static_model(source, cache, None)
    assert len(distilled) == 2
    warning = next(e for e in logs if e["log_level"] == "warning")
    assert str(path) in warning["reason"] and reason in warning["reason"]
    assert read_vectors(path, VOCAB_SIZE).shape == (VOCAB_SIZE, STATIC_DIMENSIONS)


def _rewrite(path: Path, vectors: Vectors | None, checksum: np.ndarray | None) -> None:
    with np.load(path) as data:
        kept = {"vectors": data["vectors"], "checksum": data["checksum"]}
    kept["vectors"] = vectors if vectors is not None else kept["vectors"]
    kept["checksum"] = checksum if checksum is not None else kept["checksum"]
    with path.open("wb") as handle:
        np.savez(handle, **kept)


def test_a_failing_distiller_is_reported_with_its_reason(tmp_path: Path) -> None:
    require_semantic()
    corrupt = tmp_path / "model.onnx"
    corrupt.write_bytes(b"not an onnx graph")
    index = SemanticIndex("mine-static", corrupt, cache_dir=tmp_path / "cache")
    with pytest.raises(SemanticUnavailableError, match=r"cannot distil a static model from .*"):
        index.model(wait=None)
    assert cached_files(tmp_path / "cache") == []


def test_a_stopping_server_ends_a_distillation_under_way(
    tmp_path: Path, source: ModelSource
) -> None:
    """A first start distils for tens of seconds; stopping then must not wait for it."""
    failures: list[BaseException] = []

    def load() -> None:
        try:
            load_static_model(source, tmp_path / "cache", 1)
        except SemanticUnavailableError as exc:
            failures.append(exc)

    loading = threading.Thread(target=load)
    loading.start()
    wait_for(lambda: bool(static._distillers), 10, "the distiller process")
    static.stop_distilling()
    loading.join(10)
    assert not loading.is_alive()
    assert len(failures) == 1 and "cannot distil" in str(failures[0])
    assert cached_files(tmp_path / "cache") == []


def test_a_distillation_reports_how_far_it_is(tmp_path: Path, source: ModelSource) -> None:
    """What a search says while the model is built ("building the embedding model, 40 %")
    comes from the distiller child, batch by batch."""
    shares: list[float] = []
    loading = threading.Thread(
        target=lambda: _ignore_stop(lambda: load_static_model(source, tmp_path, 1, shares.append))
    )
    loading.start()
    try:
        wait_for(lambda: any(0 < share < 1 for share in shares), 120, "a progress report")
    finally:
        static.stop_distilling()
        loading.join(10)
    assert shares[0] == 0.0 and shares == sorted(shares)


def _ignore_stop(load: Callable[[], object]) -> None:
    with contextlib.suppress(SemanticUnavailableError):  # stopped once it had reported
        load()


def test_an_unwritable_cache_folder_is_named(tmp_path: Path, source: ModelSource) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(SemanticUnavailableError, match="set embedding_cache_dir"):
        load_static_model(source, blocker / "cache", None)


def test_reduction_keeps_the_top_axes_and_weighs_rare_tokens_more() -> None:
    rng = np.random.default_rng(3)
    raw = (rng.standard_normal((1000, 384)) * np.linspace(3, 0.1, 384)).astype(np.float32)
    keep = np.ones(1000, dtype=bool)
    keep[[0, 5]] = False
    reduced = reduce_vectors(raw, keep)
    assert reduced.shape == (1000, STATIC_DIMENSIONS) and reduced.dtype == np.float32
    assert not reduced[[0, 5]].any()
    norms = np.linalg.norm(reduced[keep], axis=1)
    assert norms[-100:].mean() > 2 * norms[:100].mean()  # later rank: rarer, weighs more
    variance = reduced[keep].var(axis=0)
    assert variance[0] > variance[-1]  # the first axis carries the most


_NO_RUNTIME = """
import sys
from weaver.semantic.model_loader import load_model
model = load_model()
assert model.embed_query("tides and the moon").shape == (model.dimensions,)
print(",".join(m for m in ("onnxruntime", "torch") if m in sys.modules) or "none")
"""


def test_the_static_model_runs_without_onnx_runtime(semantic_index: SemanticIndex) -> None:
    """Once distilled, embedding loads no ONNX Runtime: the daemon's memory stays that of a
    31 MB matrix, not a ~230 MB session (the distiller runs in a child process)."""
    semantic_index.model()  # distilled into this session's cache, which the child reads
    done = subprocess.run(
        [sys.executable, "-c", _NO_RUNTIME], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "none"
