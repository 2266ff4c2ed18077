"""A static embedding model, distilled here from the shipped transformer (model2vec's method).

Distilling gives every token of the transformer's vocabulary a vector (placeholder tokens
`[unusedN]` and `[UNK]` get none), keeps its `STATIC_DIMENSIONS` directions of largest variance
and weighs frequent tokens down. Embedding: a text's vector is the normalised sum of its tokens'
rows, so no transformer runs at all; its loss of quality is measured in docs/semantic-search.md.

The distilled matrix is cached in the user's cache folder (`embedding_cache_dir`), named by the
hash of the source model and tokenizer files and the recipe: a changed model file is distilled
again, and a cached file that cannot be read (truncated, corrupt, wrong shape) is rebuilt with a
warning saying what was wrong. A lock file keeps two processes from distilling at once. The
recipe: docs/architecture.md, "semantic/static.py".
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from weaver import file_locks
from weaver.errors import SemanticUnavailableError
from weaver.file_replace import replace_file
from weaver.semantic.model import ModelSource, TransformerModel, Vectors, load_tokenizer

if TYPE_CHECKING:  # numpy is imported where vectors are computed: not to start a server
    import numpy as np
    import numpy.typing as npt

log = structlog.get_logger(__name__)

STATIC_DIMENSIONS = 256
SIF_COEFFICIENT = 1e-4
RECIPE = f"m2v-sep-cls-mean3-pca{STATIC_DIMENSIONS}-sif{SIF_COEFFICIENT:g}-r1"
# Tokens per transformer call while distilling: 3 positions each, so a call is small.
DISTIL_BATCH = 512
_HASH_BLOCK = 1 << 20
_PLACEHOLDER = re.compile(r"\[unused\d+\]")
# How the distiller child says how far it is: `progress 12288/30522` on a line of its own.
PROGRESS_MARK = "progress "
# Told the share of a distillation done (0-1).
Progress = Callable[[float], None]
# Distiller processes running, so that a stopping server ends them (`stop_distilling`)
# rather than wait up to a minute for a matrix it will not use.
_distillers: set[subprocess.Popen[str]] = set()
_distillers_lock = threading.Lock()


class StaticModel:
    """Token vectors and the tokenizer that splits texts into those tokens."""

    def __init__(self, source: ModelSource, vectors: Vectors, tokenizer: Any) -> None:
        self.model_id = source.model_id
        self.source = source  # the transformer it was distilled from
        self.dimensions = int(vectors.shape[1])
        self._vectors = vectors
        self._tokenizer = tokenizer

    def embed_texts(self, texts: list[str]) -> Vectors:
        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        for row, encoding in enumerate(encoded):
            if encoding.ids:
                out[row] = self._vectors[encoding.ids].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.maximum(norms, 1e-12)
        return out

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_texts([text])[0]
        return vector


def load_static_model(
    source: ModelSource,
    cache_dir: Path,
    threads: int | None,
    on_progress: Progress | None = None,
) -> StaticModel:
    """The static model distilled from `source`: from the cache when there, else distilled
    (with the transformer, `threads` threads, telling `on_progress` the share done) and
    cached."""
    tokenizer = load_tokenizer(source.tokenizer_path, None)
    path = cache_dir / f"static-{source_digest(source)[:24]}.npz"
    size = tokenizer.get_vocab_size()
    report = on_progress or (lambda _: None)
    with _locked(path):
        try:
            vectors = read_vectors(path, size)
        except FileNotFoundError:
            vectors = _distil_to(path, source, threads, report)
        except CorruptCacheError as exc:
            log.warning("distilling the static embedding model again", reason=str(exc))
            vectors = _distil_to(path, source, threads, report)
    return StaticModel(source, vectors, tokenizer)


def source_digest(source: ModelSource) -> str:
    """What a distilled matrix depends on: the model file, the tokenizer file, the recipe."""
    digest = hashlib.sha256(RECIPE.encode())
    for path in (source.onnx_path, source.tokenizer_path):
        with path.open("rb") as handle:
            while block := handle.read(_HASH_BLOCK):
                digest.update(block)
    return digest.hexdigest()


def _distil_to(path: Path, source: ModelSource, threads: int | None, report: Progress) -> Vectors:
    """Distil in a child process, then read what it cached: the transformer's ONNX session
    (~300 MB at its peak) never enters this process's memory, which a long-running daemon
    would keep (glibc hands little of it back). The child's output is one pipe: its progress
    lines, and anything else it says (the last line of which names a failure)."""
    started = time.monotonic()
    command = [
        sys.executable,
        "-m",
        __name__,
        str(source.onnx_path),
        str(source.tokenizer_path),
        str(path),
        str(threads or 0),
    ]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    with _distillers_lock:
        _distillers.add(child)
    report(0.0)
    try:
        said = _follow(child, report)
    finally:
        with _distillers_lock:
            _distillers.discard(child)
    if child.returncode != 0:
        why = (said or [f"exit status {child.returncode}"])[-1]
        raise SemanticUnavailableError(
            f"cannot distil a static model from {source.onnx_path}: {why}"
        )
    vectors = read_vectors(path, load_tokenizer(source.tokenizer_path, None).get_vocab_size())
    log.info(
        "distilled the static embedding model",
        source=str(source.onnx_path),
        seconds=round(time.monotonic() - started, 1),
        cached=str(path),
    )
    return vectors


def _follow(child: subprocess.Popen[str], report: Progress) -> list[str]:
    """Read the child's output to its end: progress lines go to `report`; the other lines
    (its last few) are returned."""
    said: list[str] = []
    assert child.stdout is not None
    with child.stdout:
        for line in child.stdout:
            if line.startswith(PROGRESS_MARK):
                done, _, total = line[len(PROGRESS_MARK) :].partition("/")
                report(int(done) / max(int(total), 1))
            elif line.strip():
                said = [*said[-9:], line.strip()]
    child.wait()
    return said


def stop_distilling() -> None:
    """End the distiller processes this process started (a server stopping): the waiting
    caller gets `SemanticUnavailableError`, and the half-written matrix is never read (it is
    written under a temporary name, or fails its checksum and is distilled again)."""
    with _distillers_lock:
        running = list(_distillers)
    for child in running:
        child.terminate()


def distil_file(source: ModelSource, path: Path, threads: int | None) -> None:
    """Distil `source` and write the matrix to `path` (what the child process runs), saying
    how far it is on stdout."""
    transformer = TransformerModel(source, threads)
    write_vectors(path, distil_vectors(transformer, _print_progress))


def _print_progress(done: int, total: int) -> None:
    print(f"{PROGRESS_MARK}{done}/{total}", flush=True)


# ---------------------------------------------------------------- distilling


def distil_vectors(
    transformer: TransformerModel, on_batch: Callable[[int, int], None] | None = None
) -> Vectors:
    """One row per token of the transformer's vocabulary: its output vector, reduced by PCA
    and weighted by SIF; zero for tokens that carry no meaning of their own. `on_batch` is
    told the tokens done and their number after each batch."""
    import numpy as np

    tokenizer = transformer.tokenizer
    size = tokenizer.get_vocab_size()
    start_id, end_id = _markers(tokenizer)
    raw = np.empty((size, transformer.dimensions), dtype=np.float32)
    for first in range(0, size, DISTIL_BATCH):
        ids = np.arange(first, min(size, first + DISTIL_BATCH), dtype=np.int64)
        rows = np.stack([np.full_like(ids, end_id), ids, np.full_like(ids, start_id)], axis=1)
        raw[first : first + len(ids)] = transformer.hidden_states(rows).mean(axis=1)
        if on_batch is not None:
            on_batch(first + len(ids), size)
    return reduce_vectors(raw, _meaningful(tokenizer, size))


def _markers(tokenizer: Any) -> tuple[int, int]:
    """The ids the tokenizer puts before and after a text (`[CLS]` and `[SEP]` for BERT)."""
    ids = tokenizer.encode("a").ids
    if len(ids) < 3:
        raise SemanticUnavailableError(
            "cannot distil a static model: the tokenizer adds no start and end tokens"
        )
    return int(ids[0]), int(ids[-1])


def _meaningful(tokenizer: Any, size: int) -> npt.NDArray[np.bool_]:
    import numpy as np

    unknown = tokenizer.token_to_id("[UNK]")
    keep = np.array(
        [not _PLACEHOLDER.fullmatch(tokenizer.id_to_token(i) or "") for i in range(size)]
    )
    if unknown is not None:
        keep[unknown] = False
    return keep


def reduce_vectors(raw: Vectors, keep: npt.NDArray[np.bool_]) -> Vectors:
    """PCA to `STATIC_DIMENSIONS` (fitted on the kept rows), then SIF weights by rank among
    the kept rows; the other rows are zero."""
    import numpy as np

    kept = raw[keep]
    kept = kept - kept.mean(axis=0, dtype=np.float64).astype(np.float32)
    # The principal axes are the covariance's top eigenvectors: a 384 x 384 problem, where
    # an SVD of the whole matrix would be 30,000 x 384.
    eigenvalues, axes = np.linalg.eigh((kept.T @ kept).astype(np.float64))
    order = np.argsort(eigenvalues)[::-1][: min(STATIC_DIMENSIONS, raw.shape[1])]
    reduced = (kept @ axes[:, order].astype(np.float32)).astype(np.float64)
    rank = np.arange(2, len(reduced) + 2, dtype=np.float64)
    probability = (1 / rank) / np.sum(1 / rank)
    reduced *= (SIF_COEFFICIENT / (SIF_COEFFICIENT + probability))[:, None]
    out = np.zeros((len(raw), reduced.shape[1]), dtype=np.float32)
    out[keep] = reduced
    return out


# ---------------------------------------------------------------- the cached matrix


class CorruptCacheError(SemanticUnavailableError):
    """A cached static model that cannot be used: it is distilled again."""


def write_vectors(path: Path, vectors: Vectors) -> None:
    """Write the matrix with its checksum, atomically: a reader sees the old file or the new."""
    import numpy as np

    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        with partial.open("wb") as handle:
            np.savez(handle, vectors=vectors, checksum=_checksum(vectors))
        replace_file(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise _unwritable(path, exc) from exc


def read_vectors(path: Path, rows: int) -> Vectors:
    """The cached matrix; `FileNotFoundError` when absent, `CorruptCacheError` saying what is
    wrong when it cannot be used."""
    import numpy as np

    try:
        # The file opened here, not by np.load: it leaks its handle on a truncated archive.
        with path.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
            vectors = data["vectors"]
            checksum = data["checksum"]
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise CorruptCacheError(f"cached static model {path} cannot be read: {exc}") from exc
    if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[0] != rows:
        raise CorruptCacheError(
            f"cached static model {path} holds a {vectors.dtype} matrix of shape "
            f"{vectors.shape}, not {rows} float32 rows"
        )
    if not np.array_equal(checksum, _checksum(vectors)):
        raise CorruptCacheError(f"cached static model {path} fails its checksum")
    result: Vectors = vectors
    return result


def _checksum(vectors: Vectors) -> npt.NDArray[np.uint8]:
    import numpy as np

    digest = hashlib.sha256(np.ascontiguousarray(vectors).tobytes()).digest()
    return np.frombuffer(digest, dtype=np.uint8)


def _unwritable(path: Path, exc: OSError) -> SemanticUnavailableError:
    return SemanticUnavailableError(
        f"cannot keep the static embedding model in {path.parent}: {exc.strerror or exc} "
        "(set embedding_cache_dir to a writable folder)"
    )


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One process distils a given model at a time; the others wait, then read its file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.with_name(path.name + ".lock").open("a")
    except OSError as exc:
        raise _unwritable(path, exc) from exc
    with handle:
        file_locks.lock(handle)
        try:
            yield
        finally:
            file_locks.unlock(handle)


def main(argv: list[str]) -> int:
    """`python -m weaver.semantic.static MODEL TOKENIZER OUT THREADS`: distil, for `_distil_to`."""
    onnx_path, tokenizer_path, out, threads = argv
    source = ModelSource("distilling", Path(onnx_path), Path(tokenizer_path))
    distil_file(source, Path(out), int(threads) or None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
