"""Who is calling a tool: the local user (stdio, in memory), a script holding `http_token`,
or an OAuth client with the scopes its grant gave it.

The MCP SDK's bearer-auth middleware keeps the request's access token in a context variable,
which follows the request into the tool (and into the worker thread a tool runs in: anyio
copies the context). Access rules, the audit and rate limits all start from `current_caller`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mcp.server.auth.middleware.auth_context import get_access_token

from weaver.runtime.oauth_server import HTTP_TOKEN_CLIENT, SCOPES, GrantAccessToken

CallerKind = Literal["local", "token", "oauth"]


@dataclass(frozen=True, slots=True)
class Caller:
    """One caller. `client_id` is stable (what rules and records key on); `name` is what a
    person reads (an OAuth client's registered name)."""

    kind: CallerKind
    client_id: str
    name: str
    scopes: frozenset[str]

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


LOCAL_CALLER = Caller("local", "local", "local", frozenset(SCOPES))


def current_caller() -> Caller:
    """The caller of the request being served; the local user outside an HTTP request."""
    token = get_access_token()
    if token is None:
        return LOCAL_CALLER
    if token.client_id == HTTP_TOKEN_CLIENT:
        return Caller("token", HTTP_TOKEN_CLIENT, "http_token", frozenset(SCOPES))
    name = token.client_name if isinstance(token, GrantAccessToken) else ""
    return Caller("oauth", token.client_id, name or token.client_id, frozenset(token.scopes))
