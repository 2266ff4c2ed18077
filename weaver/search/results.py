"""What a search is asked, what it reads, and the one page of hits it answers with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import Connection, Engine

from weaver.cache.attachment_text import PageHit
from weaver.semantic.search import SemanticIndex
from weaver.views.names import NameIndex

SearchMode = Literal["keyword", "semantic", "hybrid"]


@dataclass(frozen=True, slots=True)
class SearchSources:
    """What a search reads: the cache, the notes' names (a kept index, as of a connection's
    snapshot) and the vectors. `semantic_enabled` is the `semantic` setting: off, the default
    mode is keyword even where vectors exist."""

    db: Engine
    names: Callable[[Connection], NameIndex]
    semantic: SemanticIndex
    semantic_enabled: bool


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """`directory` is a folder in the cache's spelling (None: the whole vault) and `tag` a tag's
    key (nested tags match); the edges normalise what a person typed. `mode` None: the default."""

    query: str
    mode: SearchMode | None = None
    directory: str | None = None
    tag: str | None = None
    limit: int = 20
    offset: int = 0


@dataclass(frozen=True, slots=True)
class NoteHit:
    path: str
    title: str
    snippet: str  # keyword: the best passage with <mark>...</mark>; else the closest chunk
    score: float  # keyword: -bm25; semantic: a cosine 0-1 (best chunks); hybrid: fused RRF
    tags: tuple[str, ...]
    modified: int  # Unix epoch ms


@dataclass(frozen=True, slots=True)
class SearchResults:
    query: str
    hits: list[NoteHit]
    total: int
    limit: int
    offset: int
    mode: SearchMode
    fts_query: str | None = None  # keyword: the expression run, as written; None: no words
    coverage: str | None = None  # semantic and hybrid: how much of the vault has vectors
    complete: bool = True  # every note searched (false while some wait for their vectors)
    total_exact: bool = True  # False: `total` is an estimate (hybrid, beyond what it read)
    # Semantic and hybrid, while not every note can be searched by meaning yet: how far the
    # model's build or the notes' embedding is ("building the embedding model, 40 %").
    progress: str | None = None
    # PDFs matching in the notes' mode, each at its best page, paged by the
    # same `offset` and `limit` as the notes; `attachment_text` says why there are none where
    # they cannot be searched (no PDF library, a PostgreSQL cache).
    attachment_hits: list[PageHit] = field(default_factory=list)
    attachment_total: int = 0
    attachment_text: str | None = None

    @property
    def has_more(self) -> bool:
        """More notes, or more PDF pages, beyond this page."""
        notes_left = self.offset + len(self.hits) < self.total
        return notes_left or self.offset + len(self.attachment_hits) < self.attachment_total
