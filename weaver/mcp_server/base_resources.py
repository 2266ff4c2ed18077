"""`weaver://base/{+path}`: a base's view as a resource, what query_base answers with its
defaults. `path` is a `.base` file or a note holding ```base blocks; `?view=NAME` picks a view
and `?block=N` a note's block (`weaver://base/Reading.base?view=To%20read`).

A subscriber hears `notifications/resources/updated` when the view's rows or summaries change:
after a batch of note changes the view is run again and compared with what it was (its rows,
values and summaries, not the clock), only while someone is subscribed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote, urlsplit

from weaver.cache import read
from weaver.errors import BaseFileError, WeaverError
from weaver.mcp_server import base_answers
from weaver.runtime import base_views
from weaver.runtime.state import ServerState

BASE_PREFIX = "weaver://base/"
BASE_TEMPLATE = BASE_PREFIX + "{+path}"
ROWS = 50


@dataclass(frozen=True, slots=True)
class BaseAddress:
    path: str
    view: str | None
    block: int | None


def base_uri(path: str, view: str | None = None) -> str:
    uri = BASE_PREFIX + quote(path, safe="/")
    return uri if view is None else f"{uri}?view={quote(view, safe='')}"


def is_base_uri(uri: str) -> bool:
    return uri.startswith(BASE_PREFIX)


def address_of(uri: str) -> BaseAddress:
    parts = urlsplit(uri.removeprefix(BASE_PREFIX))
    query = parse_qs(parts.query)
    view = query.get("view", [None])[0]
    block = query.get("block", [None])[0]
    if block is not None and not block.isdigit():
        raise BaseFileError("block", f"not a block number: {block!r}")
    return BaseAddress(unquote(parts.path), view, None if block is None else int(block))


def read_base(state: ServerState, uri: str) -> str:
    """The resource's JSON text: the view's first page, as query_base answers it."""
    return json.dumps(base_answers.view_answer(_run(state, uri), ROWS, 0), ensure_ascii=False)


def fingerprint(state: ServerState, uri: str) -> str:
    """A digest of the view's rows now (or of why it cannot be run: a base mended is news)."""
    try:
        text = base_answers.fingerprint_text(_run(state, uri))
    except (WeaverError, OSError) as exc:
        text = f"error: {exc}"
    return hashlib.sha256(text.encode()).hexdigest()


def _run(state: ServerState, uri: str) -> base_views.BaseRun:
    address = address_of(uri)
    source = base_views.read_source(state.app.vault, address.path, address.block)
    with read.read_snapshot(state.app.db) as conn:
        return base_views.run_source(conn, source, address.view)
