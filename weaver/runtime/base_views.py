"""Bases run over the vault: a `.base` file or a note's ```base block read, its view evaluated
over the files the cache holds (`weaver.bases` for the language and views, `weaver.cache.
base_files` for the files), and the bases of the vault listed. What the `bases` tools, the
`weaver://base/` resource, the dashboard and `weaver base` share.

`this` is the base's own file for a `.base` file and the note holding the block for a block, as
in Obsidian. The clock is read once per run, so every row of a view sees the same `now()`."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from sqlalchemy import Connection, select

from weaver.bases.document import BaseDocument, ViewSpec, base_blocks, parse_base, view_of
from weaver.bases.environment import Environment
from weaver.bases.filters import all_of
from weaver.bases.row_key import row_key
from weaver.bases.view import ViewResult, assemble_view, evaluate_rows, run_view
from weaver.cache import fts
from weaver.cache.base_files import file_at, file_finder, left_to_evaluate, load_files
from weaver.cache.models import Attachment
from weaver.errors import BaseFileError, NoteDecodeError, WeaverError
from weaver.runtime.kept_rows import Listing, kept_for
from weaver.vault.fs import BASES, Vault

BASE_SUFFIX = BASES.suffix
# Notes read at most when listing the ```base blocks of a vault: those whose text holds the
# word, found by the full-text index, not every note read from disk.
MAX_BLOCK_NOTES = 5_000


@dataclass(frozen=True, slots=True)
class BaseSource:
    """Where a base comes from: a `.base` file (`block` None) or a note's n-th block."""

    path: str
    block: int | None
    text: str

    @property
    def label(self) -> str:
        return self.path if self.block is None else f"{self.path} (base block {self.block})"


# A question asked without a base (`query_notes`): no file, so `this` is no file either.
AD_HOC = BaseSource("", None, "")


@dataclass(frozen=True, slots=True)
class BaseRun:
    """A view evaluated: the base it came from, its document, the view's result."""

    source: BaseSource
    document: BaseDocument
    result: ViewResult
    now: dt.datetime


@dataclass(frozen=True, slots=True)
class BaseListing:
    """One base of the vault, with its views' names and types, or why it cannot be read."""

    path: str
    block: int | None
    line: int | None  # the block's opening fence (1-based); None for a file
    views: tuple[tuple[str, str, str | None], ...]  # name, layout, why it cannot run
    error: str | None


def read_source(vault: Vault, path: str, block: int | None) -> BaseSource:
    """The base at `path`: a `.base` file, or (a note path) its `block`-th ```base block,
    the first when `block` is None. Errors name the path and what is missing."""
    if path.lower().endswith(BASE_SUFFIX):
        clean = vault.of_kind(BASES).check_note_path(path)
        if block is not None:
            raise BaseFileError("block", f"{clean} is a .base file: it has no blocks")
        return BaseSource(clean, None, _decoded(clean, vault.of_kind(BASES).read_note(clean)))
    clean = vault.check_note_path(path)
    blocks = base_blocks(_decoded(clean, vault.read_note(clean)))
    index = 0 if block is None else block
    if index >= len(blocks):
        raise BaseFileError("block", f"{clean} holds {len(blocks)} base block(s)")
    return BaseSource(clean, index, blocks[index].text)


def run_source(
    conn: Connection, source: BaseSource, view: str | None, now: dt.datetime | None = None
) -> BaseRun:
    """`source`'s view `view` (None: its first) over the vault's files as the cache has them."""
    document = parse_base(source.text)
    return run_document(conn, source, document, view_of(document, view), now)


def run_document(
    conn: Connection,
    source: BaseSource,
    document: BaseDocument,
    spec: ViewSpec,
    now: dt.datetime | None = None,
) -> BaseRun:
    """One view of `document` evaluated; every expression error is the whole view's. The
    cache narrows the files by what of the filters SQL decides; the rest is evaluated here."""
    clock = now or dt.datetime.now()
    keep = all_of(document.filters, spec.filters)
    this = file_at(conn, source.path) if source.path else None
    env = Environment(now=clock, this=this, find_file=file_finder(conn, source.path))
    # The filters left are the view's alone: the base's are in them (`all_of` above).
    evaluated = dataclasses.replace(document, filters=None)
    view = dataclasses.replace(spec, filters=left_to_evaluate(keep))
    listing = functools.partial(load_files, conn, keep)
    key = row_key(document, spec)
    if key is None:
        result = run_view(evaluated, view, listing(None).files, env)
    else:
        result = _from_kept_rows(conn, (key, env.today), evaluated, view, listing, env)
    return BaseRun(source, document, result, clock)


def _from_kept_rows(
    conn: Connection,
    key: Hashable,
    document: BaseDocument,
    view: ViewSpec,
    listing: Listing,
    env: Environment,
) -> ViewResult:
    """The view, from the rows kept of its earlier runs (its rows read only their own files:
    `kept_rows`); when a row fails, evaluated whole as `run_view` does."""
    try:
        rows = kept_for(conn.engine).rows(
            key, conn, listing, lambda files: evaluate_rows(document, view, files, env)
        )
    except WeaverError:
        # The kept path reads every kept row's cells, `run_view` only the rows it shows: its
        # run says whether the error is the view's, and is the answer either way.
        return run_view(document, view, listing(None).files, env)
    return assemble_view(document, view, env, rows)


def list_bases(conn: Connection, vault: Vault) -> Iterator[BaseListing]:
    """The vault's `.base` files, then the notes' ```base blocks, each in path order."""
    base_files = conn.execute(
        select(Attachment.path)
        .where(Attachment.path.like(f"%{BASE_SUFFIX}"))
        .order_by(Attachment.path)
    ).scalars()
    for path in base_files:
        yield _listing_of_file(vault, path)
    yield from _block_listings(conn)


def _listing_of_file(vault: Vault, path: str) -> BaseListing:
    try:
        text = _decoded(path, vault.of_kind(BASES).read_note(path))
        return BaseListing(path, None, None, _views(parse_base(text)), None)
    except (WeaverError, OSError) as exc:
        return BaseListing(path, None, None, (), _reason(exc))


def _block_listings(conn: Connection) -> Iterator[BaseListing]:
    expression = fts.fts_query("base")
    if expression is None or not fts.supported(conn):
        return
    candidates = sorted(fts.ranked_paths(conn, expression, MAX_BLOCK_NOTES))
    for start in range(0, len(candidates), 500):
        bodies = fts.note_bodies(conn, candidates[start : start + 500])
        for path in sorted(bodies):
            for block in base_blocks(bodies[path]):
                yield _listing_of_block(path, block.index, block.line, block.text)


def _listing_of_block(path: str, index: int, line: int, text: str) -> BaseListing:
    try:
        return BaseListing(path, index, line, _views(parse_base(text)), None)
    except WeaverError as exc:
        return BaseListing(path, index, line, (), _reason(exc))


def _views(document: BaseDocument) -> tuple[tuple[str, str, str | None], ...]:
    return tuple(
        (v.name, v.type, None if v.error is None else str(v.error)) for v in document.views
    )


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, WeaverError) else f"cannot read the file ({exc})"


def _decoded(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise NoteDecodeError(path, f"invalid byte at offset {exc.start}") from None
