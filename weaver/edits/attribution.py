"""Who the writes being made now are for: the audit's "who" (`weaver.cache.audit_log`).

Each edge says it once, around the work it runs: the MCP catalog for a tool call (the caller
and the tool), the command line for a command, the workflow engine for a run. The edits core
reads it when it journals a run. A context variable rather than an argument through every edit
function: it follows the call into the worker thread a tool runs in (anyio copies the context),
and a write made outside any edge (a test, a script importing Weaver) is the local user's.
Light on purpose (no SQLAlchemy): the command line sets it before any command runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is writing: `kind` ("local", "token", "oauth", "cli", "workflow"), a stable
    `client_id` (what the audit's filters key on), the `name` a person reads, and the `tool`
    (or command, or workflow) that wrote; "" for the journalled operation's own name."""

    kind: str
    client_id: str
    name: str
    tool: str = ""


LOCAL = Actor("local", "local", "local", "")

_actor: ContextVar[Actor] = ContextVar("weaver_actor", default=LOCAL)


def current_actor() -> Actor:
    return _actor.get()


@contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    """Attribute the block's writes (in this context, and threads started from it) to `actor`."""
    token = _actor.set(actor)
    try:
        yield actor
    finally:
        _actor.reset(token)
