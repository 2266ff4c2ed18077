"""Who changed what, as MCP clients see it: an OAuth client's write audited under its name with
its edit id (over real HTTP), `get_audit_log` refused to a client without `weaver:admin`, and
the per-client rate limits of expensive calls, refusing and then allowing once the bucket
refills (an injected clock: no sleeping)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Tools, serve, tools_of
from tests.mcp_server.test_confirmation import Person
from tests.mcp_server.test_oauth import (
    OWNER,
    Site,
    authorize,
    consent,
    grant,
    pkce,
    query_of,
    register,
    served,
    token,
)
from weaver.config import Settings
from weaver.runtime.rate_limits import RateLimiter

pytestmark = pytest.mark.anyio

EVERY_TOOLSET = ["all"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", {"Plan.md": "# Plan\n#project\n", "Other.md": "x\n"})


@asynccontextmanager
async def client_with(site: Site, bearer: str) -> AsyncIterator[Tools]:
    headers = {"authorization": f"Bearer {bearer}"}
    async with httpx2.AsyncClient(headers=headers, timeout=10) as http_client:
        transport = streamable_http_client(site.mcp, http_client=http_client)
        async with Client(transport) as client:
            yield Tools(client)


async def grant_scopes(site: Site, scopes: str) -> str:
    """A client granted only `scopes`: its access token."""
    client_id = await register(site)
    verifier, challenge = pkce()
    sent = await authorize(site, client_id, challenge, scope=scopes)
    assert sent.status_code == 302, sent.text
    back = await consent(site, sent.headers["location"])
    code = query_of(back.headers["location"])["code"]
    tokens = await token(site, client_id, code=code, code_verifier=verifier)
    assert tokens.status_code == 200, tokens.text
    return str(tokens.json()["access_token"])


async def test_an_oauth_clients_write_is_audited_with_its_name_and_edit_id(vault: Path) -> None:
    async with served(vault, toolsets=EVERY_TOOLSET) as site:
        client_id, tokens = await grant(site)
        async with client_with(site, tokens["access_token"]) as phone:
            await phone.ok("edit_file", path="Plan.md", position="append", content="from phone")
            edit_id = (await phone.ok("list_edits", path="Plan.md"))["edits"][0]["editId"]
        async with client_with(site, OWNER) as script:
            await script.ok("create_file", path="Script.md", content="by a script\n")
            log = await script.ok("get_audit_log")
            by_phone = await script.ok("get_audit_log", client="Phone assistant")
            by_note = await script.ok("get_audit_log", note="Script.md")
    assert log["total"] == 2 and not log["hasMore"]
    assert [e["tool"] for e in log["entries"]] == ["create_file", "edit_file"]  # newest first
    [entry] = by_phone["entries"]
    assert entry == {
        "at": entry["at"],
        "callerKind": "oauth",
        "clientId": client_id,
        "clientName": "Phone assistant",
        "tool": "edit_file",
        "path": "Plan.md",
        "editId": edit_id,
        "outcome": "written",
        "detail": None,
    }
    [script_entry] = by_note["entries"]
    assert (script_entry["callerKind"], script_entry["clientName"]) == ("token", "http_token")


async def test_the_audit_log_is_refused_to_a_client_without_the_admin_scope(vault: Path) -> None:
    async with served(vault, toolsets=EVERY_TOOLSET) as site:
        reader = await grant_scopes(site, "weaver:read weaver:write")
        async with client_with(site, reader) as phone:
            refused = await phone.error("get_audit_log")
            # What it may do, it still does.
            await phone.ok("get_stats")
    assert "needs the scope 'weaver:admin'" in refused  # answered before the tool runs
    assert "'Phone assistant'" in refused


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_an_expensive_call_past_its_limit_says_when_to_retry(tmp_path: Path) -> None:
    settings = Settings(
        vault=vault_of(tmp_path), toolsets=EVERY_TOOLSET, rate_limit_graph=2, rate_limit_local=True
    )
    served_app = serve(settings)
    clock = Clock()
    served_app.state.rate_limiter = RateLimiter(settings, clock=clock)
    try:
        async with tools_of(served_app, "auto") as tools:
            await tools.ok("get_hubs")
            await tools.ok("get_neighbors", path="Plan.md")  # one bucket for the whole class
            refused = await tools.raw("get_graph", {})
            # Other classes, and calls of no class, are not held up by it.
            await tools.ok("get_stats")
            await tools.ok("search_notes", query="plan")
            clock.now += 29.0  # two calls a minute: one back every 30 s
            still = await tools.raw("get_hubs", {})
            clock.now += 1.0
            await tools.ok("get_hubs")
    finally:
        served_app.app.close()
    assert refused["success"] is False and "data" not in refused
    assert refused["error"] == (
        "Rate limited: this client may make 2 link-graph calls per minute (rate_limit_graph); "
        "retry in 30 s"
    )
    assert refused["retryAfterSeconds"] == 30
    assert still["retryAfterSeconds"] == 1 and "retry in 1 s" in still["error"]


async def test_local_callers_are_not_limited_by_default(tmp_path: Path) -> None:
    settings = Settings(vault=vault_of(tmp_path), toolsets=EVERY_TOOLSET, rate_limit_graph=1)
    served_app = serve(settings)
    try:
        async with tools_of(served_app, "auto") as tools:
            for _ in range(3):
                await tools.ok("get_hubs")
    finally:
        served_app.app.close()


async def test_http_clients_are_limited_each_in_their_own_bucket(vault: Path) -> None:
    async with served(vault, toolsets=EVERY_TOOLSET, rate_limit_bulk=1) as site:
        site.state.rate_limiter = RateLimiter(site.state.app.settings, clock=Clock())
        _, tokens = await grant(site)
        async with client_with(site, tokens["access_token"]) as phone:
            await phone.ok("add_tags", paths=["Plan.md"], tags=["one"])
            refused = await phone.error("add_tags", paths=["Plan.md"], tags=["two"])
        async with client_with(site, OWNER) as script:
            await script.ok("add_tags", paths=["Other.md"], tags=["three"])
    assert "1 bulk-edit calls per minute (rate_limit_bulk); retry in 60 s" in refused
    assert "two" not in (vault / "Plan.md").read_text()


def vault_of(tmp_path: Path) -> Path:
    return write_files(
        tmp_path / "vault", {"Plan.md": "# Plan\n[[Other]]\n", "Other.md": "[[Plan]]\n"}
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_limited_call_is_refused_before_the_person_is_asked(
    tmp_path: Path, mode: str
) -> None:
    """A confirmation's dry run costs what the call does, and a "yes" then refused would waste
    the person's attention: the limit comes first."""
    files = {"A.md": "#old one\n", "B.md": "#old two\n", "C.md": "#old three\n"}
    root = write_files(tmp_path / "vault", files)
    settings = Settings(
        vault=root, toolsets=EVERY_TOOLSET, rate_limit_bulk=1, rate_limit_local=True
    )
    served_app = serve(settings)
    served_app.state.rate_limiter = RateLimiter(settings, clock=Clock())
    person = Person("accept")
    try:
        async with Client(served_app.server, mode=mode, elicitation_callback=person) as client:
            tools = Tools(client)
            await tools.ok("rename_tag", tag="old", newTag="new")
            refused = await tools.error("rename_tag", tag="new", newTag="newer")
    finally:
        served_app.app.close()
    assert len(person.asked) == 1  # the first call only
    assert refused.startswith("Rate limited:") and "rate_limit_bulk" in refused
    assert "newer" not in (root / "A.md").read_text()
