"""Several named vaults behind one server: which vault a call is for, and each vault's tools.

A server configured with `[vaults.NAME]` tables has one `ServerState` per vault (its own cache,
indexer, watcher and workflow engine), and every tool bound once per vault. The tools the SDK
registers are the default vault's, their input schemas given an optional `vault` argument;
`WeaverServer.call_tool` takes `vault` out of the arguments (`VaultRouting.route`) and runs
the named vault's own tool, so no tool knows there is more than one vault. A server of one
vault has no routing at all: its tools/list is exactly a single-vault server's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from weaver.errors import did_you_mean, suggest
from weaver.mcp_server.envelope import EnvelopeTool
from weaver.runtime.lifespan import Lifespan, make_lifespan
from weaver.runtime.state import ServerState

VAULT_ARGUMENT = "vault"
EVERY_VAULT = "*"  # search_notes' `vault` for a search of every vault at once
SPANNING_TOOLS = frozenset({"search_notes"})  # the tools that take EVERY_VAULT


@dataclass(frozen=True)
class VaultRouting:
    """The vaults of a server serving several: `states` by name (the default's included, first),
    and `tools`, each vault's tools bound to its state, by vault then tool name."""

    default: str
    states: Mapping[str, ServerState]
    tools: Mapping[str, Mapping[str, EnvelopeTool]]

    @property
    def names(self) -> list[str]:
        return list(self.states)

    def route(self, tool: str, arguments: dict[str, Any]) -> str:
        """The vault a call names (its `vault` argument, taken out of `arguments`), or the
        default; `EVERY_VAULT` for a tool that spans them. An unknown name raises
        `UnknownVaultError` naming the vaults."""
        named = arguments.pop(VAULT_ARGUMENT, None)
        if named is None:
            return self.default
        if named == EVERY_VAULT and tool in SPANNING_TOOLS:
            return EVERY_VAULT
        if isinstance(named, str) and named in self.states:
            return named
        raise UnknownVaultError(self.unknown_vault(tool, named))

    def unknown_vault(self, tool: str, named: object) -> str:
        close = suggest(named, self.names) if isinstance(named, str) else []
        hint = f" ({did_you_mean(close)})" if close else ""
        spans = f", or {EVERY_VAULT!r} for every vault" if tool in SPANNING_TOOLS else ""
        return f"Unknown vault: {named!r}{hint}. The vaults: {', '.join(self.names)}{spans}"

    def parameter(self, tool: str) -> dict[str, Any]:
        """The `vault` argument's schema as tools/list shows it on `tool`: a bare string, the
        same size whatever the vaults are called. The tool list every client sends the model
        on every turn is near its budget; the instructions, sent once, name the vaults and the
        default, and a wrong name is answered with them."""
        if tool in SPANNING_TOOLS:
            return {"type": "string", "description": f"{EVERY_VAULT!r}: every vault"}
        return {"type": "string"}

    def help(self, tool: str) -> str:
        """What `vault` takes on `tool`, for its help (`weaver://help/{tool}`)."""
        others = ", ".join(name for name in self.names if name != self.default)
        text = (
            f"This server serves several vaults: {self.default} (the default), {others}. "
            f"`vault` names the one to answer from; left out, {self.default}."
        )
        if tool in SPANNING_TOOLS:
            text += (
                f" {EVERY_VAULT!r} searches every vault: their hits merged best score first, "
                "each naming its `vault`, `offset` and `limit` paging through the merge; their "
                "PDFs likewise, in `attachments` (`readWith` names the vault)."
            )
        return text

    def add_parameter(self, tool: EnvelopeTool) -> None:
        """`vault` among the listed arguments of `tool` (the default vault's)."""
        properties = tool.parameters.setdefault("properties", {})
        properties[VAULT_ARGUMENT] = self.parameter(tool.name)


class UnknownVaultError(ValueError):
    """A call naming a vault this server does not serve."""


def vaults_lifespan(states: Mapping[str, ServerState], default: str) -> Lifespan:
    """Every vault's lifespan at once (each keeps its own cache fresh), serving the default's
    state to the SDK."""

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[ServerState]:
        async with AsyncExitStack() as stack:
            for state in states.values():
                await stack.enter_async_context(make_lifespan(state)(server))
            yield states[default]

    return lifespan
