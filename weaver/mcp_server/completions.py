"""`completion/complete` and `logging/setLevel`.

Completions: the help template's `tool` (tool names), the note template's `path` (note paths by
prefix, one index range at any vault size; ignoring case when nothing starts with it as typed)
and prompt arguments by name: `path` (notes), `folder`, `tag`, `workflowId`. At most
`MAX_VALUES` values, with `total` when known and `hasMore`. Paths and folders ignoring case
come from indexes kept per cache version (`ServerState.path_prefixes`, `folder_prefixes`), not
a scan ignoring case per keystroke.

Logging: a session that sets a level hears, as `notifications/message` (logger "weaver"),
what the indexer applies to the vault (info: notes added, changed, moved, deleted), as long as
its level lets info through.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from mcp.server.connection import Connection
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    PromptReference,
    SetLevelRequestParams,
)

from weaver.cache import browse, read
from weaver.engine import WorkflowEngine
from weaver.errors import suggest
from weaver.mcp_server.access import Grant, current_grant, scope_of
from weaver.mcp_server.resources import (
    NOTE_TEMPLATE,
    VAULT_NOTE_TEMPLATE,
    Subscriptions,
    client_connection,
)
from weaver.mcp_server.tool_help import HELP_TEMPLATE, ToolHelp
from weaver.mcp_server.vaults import VaultRouting
from weaver.runtime.state import ServerState
from weaver.vault.events import VaultEvent

MAX_VALUES = 100  # the spec's limit per answer
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def complete(state: ServerState, argument: str, value: str) -> Completion:
    """Values for one argument (by name) that start with `value`, or close to it; for a
    caller confined to some folders (`access`), only paths inside them."""
    grant = current_grant(state.app.settings)
    if scope_of("read") not in grant.scopes or (grant.read is not None and argument != "path"):
        return Completion(values=[], total=0, has_more=False)  # folders and tags: vault-wide
    completion = _complete(state, argument, value)
    if grant.read is None:
        return completion
    values = [path for path in completion.values if grant.may_read(path)]
    return Completion(values=values, has_more=completion.has_more)


def _complete(state: ServerState, argument: str, value: str) -> Completion:
    with read.read_snapshot(state.app.db) as conn:
        if argument == "path":
            # As typed first: one range of the primary key, with no index to build or keep up.
            paths, more = browse.paths_starting(conn, value, MAX_VALUES)
            if not paths and value:
                paths, more = state.path_prefixes.get(conn).starting(value, MAX_VALUES)
            return Completion(values=paths, has_more=more)
        if argument == "folder":
            folders = state.folder_prefixes.get(conn)
            found, more = folders.starting(value, MAX_VALUES)
            if found:
                return Completion(values=found, total=None if more else len(found), has_more=more)
            known = folders.values
        elif argument == "tag":
            known = sorted(browse.tag_keys(conn))
        elif argument == "workflowId" and isinstance(state.engine, WorkflowEngine):
            # The registry's ids alone: `list_workflows` also aggregates the run history.
            known = sorted(w.id for w in state.engine.registry)
        else:
            return Completion(values=[], total=0, has_more=False)
    typed = value.casefold().lstrip("#")
    values = [k for k in known if k.casefold().startswith(typed)] or suggest(typed, known)
    return Completion(
        values=values[:MAX_VALUES], total=len(values), has_more=len(values) > MAX_VALUES
    )


def complete_tool(helps: ToolHelp | None, value: str) -> Completion:
    """The names of the tools (with help) that start with `value`."""
    names = [n for n in (helps.names if helps else []) if n.startswith(value.lower())]
    return Completion(values=names, total=len(names), has_more=False)


@dataclass
class LogLevels:
    """The level each client asked for; what the vault's changes are told to them at. By
    their connections, held weakly as `resources.Subscriptions` holds them: a session that
    ended is forgotten with it."""

    by_client: weakref.WeakKeyDictionary[Connection, str] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    # The grant of a client confined to some folders: it hears only of notes inside them.
    grants: weakref.WeakKeyDictionary[Connection, Grant] = field(
        default_factory=weakref.WeakKeyDictionary
    )

    def hears(self, connection: Connection, level: str) -> bool:
        wanted = self.by_client.get(connection)
        return wanted is not None and LEVELS.index(level) >= LEVELS.index(wanted)

    async def tell(self, events: Sequence[VaultEvent]) -> None:
        kinds: dict[str, list[str]] = {}
        for event in events:
            kinds.setdefault(event.kind, []).append(event.path)
        everything = {"event": "vault changed", **{k: v[:20] for k, v in kinds.items()}}
        for connection in [c for c in list(self.by_client) if self.hears(c, "info")]:
            grant = self.grants.get(connection)
            data = everything if grant is None else readable_events(grant, kinds)
            if grant is not None and len(data) == 1:
                continue  # nothing it may read changed
            with warnings.catch_warnings():
                # The SDK warns that 2026-07-28 drops logging; clients of the 2025
                # versions, which asked for it with logging/setLevel, still take it.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await connection.log("info", data, logger="weaver")  # never raises


def complete_vault(routing: VaultRouting, value: str) -> Completion:
    """The vault names starting with `value` (the vault note template's `vault`)."""
    names = [name for name in routing.names if name.startswith(value)]
    return Completion(values=names, total=len(names), has_more=False)


def readable_events(grant: Grant, kinds: dict[str, list[str]]) -> dict[str, Any]:
    """The vault-changed message with only the notes `grant` may read (none without read)."""
    readable = scope_of("read") in grant.scopes
    found = {k: [p for p in v if readable and grant.may_read(p)][:20] for k, v in kinds.items()}
    return {"event": "vault changed", **{k: v for k, v in found.items() if v}}


def install_completions(
    server: MCPServer[ServerState],
    state: ServerState,
    subscriptions: Subscriptions,
    sessions: bool = True,
    helps: ToolHelp | None = None,
    routing: VaultRouting | None = None,
) -> LogLevels:
    """Without `sessions` (stateless HTTP), a level set is kept by no session: nothing is
    remembered, as there is no later stream to send the messages on."""
    lowlevel = server._lowlevel_server  # the SDK's hook lives on the low-level server
    levels = LogLevels()
    subscriptions.also_tell(levels.tell)

    async def on_complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        await state.wait_ready()
        ref, argument = params.ref, params.argument
        if not isinstance(ref, PromptReference) and ref.uri == HELP_TEMPLATE:
            return CompleteResult(completion=complete_tool(helps, argument.value))
        held = state
        in_vaults = isinstance(ref, PromptReference) or ref.uri == VAULT_NOTE_TEMPLATE
        if in_vaults and routing:  # a prompt's or a vault's note: `vault` names which
            if argument.name == "vault":
                return CompleteResult(completion=complete_vault(routing, argument.value))
            named = params.context.arguments if params.context is not None else None
            held = routing.states.get((named or {}).get("vault", ""), state)
            await held.wait_ready()
        elif not isinstance(ref, PromptReference) and ref.uri != NOTE_TEMPLATE:
            return CompleteResult(completion=Completion(values=[], total=0, has_more=False))
        completion = await anyio.to_thread.run_sync(complete, held, argument.name, argument.value)
        return CompleteResult(completion=completion)

    async def on_set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        if sessions:
            connection = client_connection(ctx)
            levels.by_client[connection] = params.level
            grant = current_grant(state.app.settings)
            if grant.read is not None or scope_of("read") not in grant.scopes:
                levels.grants[connection] = grant
            subscriptions.watch(state)
        return EmptyResult()

    lowlevel.add_request_handler("completion/complete", CompleteRequestParams, on_complete)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, on_set_level)
    return levels
