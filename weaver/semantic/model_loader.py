"""Loading the embedding model the settings name: the transformer itself, or the static model
distilled from it (`static`), which builds on the transformer's module."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from weaver.semantic.model import (
    DEFAULT_MODEL,
    EmbeddingModel,
    TransformerModel,
    default_cache_dir,
    is_static,
    locate_model,
)
from weaver.semantic.static import load_static_model


def load_model(
    model_id: str = DEFAULT_MODEL,
    model_path: Path | None = None,
    threads: int | None = None,
    cache_dir: Path | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> EmbeddingModel:
    """The model, loaded (a static one distilled first if not cached in `cache_dir`, telling
    `on_progress` the share done); `SemanticUnavailableError` when it is not installed or
    cannot load."""
    source = locate_model(model_id, model_path)
    if not is_static(model_id):
        return TransformerModel(source, threads)
    return load_static_model(source, cache_dir or default_cache_dir(), threads, on_progress)
