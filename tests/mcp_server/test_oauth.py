"""OAuth 2.1 over real HTTP (`oauth = true`): Weaver as its own authorization server and as the
resource server of `/mcp`, driven as a client and its owner's browser would, on a loopback port."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.helpers import write_files
from tests.mcp_server.served_http import HEADERS, LEGACY, rpc, until_listening
from weaver.cache import oauth_grants
from weaver.config import Settings
from weaver.errors import ConfigError
from weaver.host.serve import http_app
from weaver.mcp_server import catalog, envelope
from weaver.mcp_server.caller import LOCAL_CALLER, Caller, current_caller
from weaver.mcp_server.server import build_server
from weaver.runtime.app import open_app
from weaver.runtime.http import bind_socket, check_http_settings, serve_http
from weaver.runtime.state import ServerState

pytestmark = pytest.mark.anyio

OWNER = "owner-s3cret"
REDIRECT = "http://127.0.0.1:9/callback"


@dataclass
class Site:
    base: str
    http: httpx2.AsyncClient
    state: ServerState

    @property
    def mcp(self) -> str:
        return self.base + "/mcp"


@asynccontextmanager
async def served(vault: Path, port: int = 0, **settings: Any) -> AsyncIterator[Site]:
    """`weaver serve --transport http`'s app with `oauth = true`, on a loopback port."""
    sock = bind_socket("127.0.0.1", port)
    port = sock.getsockname()[1]
    config = Settings(vault=vault, http_token=OWNER, oauth=True, http_port=port, **settings)
    app = open_app(config)
    state = ServerState(app, watch=False)
    site = http_app(build_server(state), state, "127.0.0.1")
    stop = anyio.Event()
    base = f"http://127.0.0.1:{port}"
    try:
        async with anyio.create_task_group() as tg, httpx2.AsyncClient(timeout=10) as http:
            tg.start_soon(serve_http, site, sock, stop)
            await state.wait_ready()
            await until_listening(http, base + "/health")
            yield Site(base, http, state)
            stop.set()
    finally:
        sock.close()
        app.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", {"Plan.md": "# Plan\n#project\n", "Other.md": "x\n"})


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


async def register(site: Site, redirect: str = REDIRECT) -> str:
    body = {
        "redirect_uris": [redirect],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "client_name": "Phone assistant",
    }
    answer = await site.http.post(site.base + "/register", json=body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


async def authorize(site: Site, client_id: str, challenge: str, **extra: str) -> httpx2.Response:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st4te",
        "resource": site.mcp,
        **extra,
    }
    return await site.http.get(site.base + "/authorize", params=params)


async def consent(site: Site, consent_url: str, secret: str = OWNER) -> httpx2.Response:
    """The owner's browser: open the consent page, enter the secret, press Allow."""
    page = await site.http.get(consent_url)
    assert page.status_code == 200, page.text
    assert "Phone assistant" in page.text
    fields = {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text
        )
    }
    form = {**fields, "secret": secret, "decision": "allow"}
    return await site.http.post(
        site.base + "/oauth/consent", data=form, headers={"origin": site.base}
    )


async def grant(site: Site) -> tuple[str, dict[str, Any]]:
    """Registration, authorize with PKCE, consent, token: the client id and its tokens."""
    client_id = await register(site)
    verifier, challenge = pkce()
    sent = await authorize(site, client_id, challenge)
    assert sent.status_code == 302, sent.text
    back = await consent(site, sent.headers["location"])
    assert back.status_code == 303, back.text
    code = query_of(back.headers["location"])["code"]
    tokens = await token(site, client_id, code=code, code_verifier=verifier)
    assert tokens.status_code == 200, tokens.text
    return client_id, tokens.json()


async def token(site: Site, client_id: str, **fields: str) -> httpx2.Response:
    grant_type = "refresh_token" if "refresh_token" in fields else "authorization_code"
    form = {"grant_type": grant_type, "client_id": client_id, **fields}
    if grant_type == "authorization_code":
        form |= {"redirect_uri": REDIRECT, "resource": site.mcp}
    return await site.http.post(site.base + "/token", data=form)


def query_of(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


async def call_stats(site: Site, access_token: str) -> httpx2.Response:
    """An MCP request with the token: initialize, the first thing any client sends."""
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t"}}
    headers = {**HEADERS, "authorization": f"Bearer {access_token}"}
    return await site.http.post(site.mcp, json=rpc("initialize", params), headers=headers)


async def test_the_whole_flow_from_discovery_to_revocation(vault: Path) -> None:
    async with served(vault) as site:
        # Discovery: the 401 names the Protected Resource Metadata, which names the issuer.
        refused = await call_stats(site, "nothing")
        assert refused.status_code == 401
        prm_url = site.base + "/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{prm_url}"' in refused.headers["www-authenticate"]
        prm = (await site.http.get(prm_url)).json()
        assert prm["resource"] == site.mcp
        assert prm["authorization_servers"] == [site.base]
        root_prm = (await site.http.get(site.base + "/.well-known/oauth-protected-resource")).json()
        assert root_prm["resource"] == site.mcp
        metadata = (
            await site.http.get(site.base + "/.well-known/oauth-authorization-server")
        ).json()
        assert metadata["issuer"] == site.base
        assert metadata["code_challenge_methods_supported"] == ["S256"]
        assert metadata["registration_endpoint"] == site.base + "/register"
        assert "weaver:write" in metadata["scopes_supported"]

        client_id, first = await grant(site)
        assert (await call_stats(site, first["access_token"])).status_code == 200

        renewed = await token(site, client_id, refresh_token=first["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        second = renewed.json()
        assert second["refresh_token"] != first["refresh_token"]
        # Rotation: the spent refresh token is refused.
        again = await token(site, client_id, refresh_token=first["refresh_token"])
        assert again.status_code == 400
        assert again.json()["error"] == "invalid_grant"
        assert (await call_stats(site, second["access_token"])).status_code == 200

        # client_secret empty: the SDK's revocation handler requires the field even of a
        # public client (it has no default in `RevocationRequest`).
        form = {"token": second["access_token"], "client_id": client_id, "client_secret": ""}
        revoked = await site.http.post(site.base + "/revoke", data=form)
        assert revoked.status_code == 200, revoked.text
        # Refused at the very next request, and the grant's refresh token with it.
        after = await call_stats(site, second["access_token"])
        assert after.status_code == 401
        assert "resource_metadata=" in after.headers["www-authenticate"]
        dead = await token(site, client_id, refresh_token=second["refresh_token"])
        assert dead.json()["error"] == "invalid_grant"


async def test_the_http_token_keeps_working_beside_oauth(vault: Path) -> None:
    async with served(vault) as site:
        assert (await call_stats(site, OWNER)).status_code == 200
        assert (await call_stats(site, OWNER + "x")).status_code == 401


async def test_a_wrong_pkce_verifier_is_refused(vault: Path) -> None:
    async with served(vault) as site:
        client_id = await register(site)
        _, challenge = pkce()
        sent = await authorize(site, client_id, challenge)
        code = query_of((await consent(site, sent.headers["location"])).headers["location"])["code"]
        other_verifier, _ = pkce()
        answer = await token(site, client_id, code=code, code_verifier=other_verifier)
        assert answer.status_code == 400
        assert answer.json() == {
            "error": "invalid_grant",
            "error_description": "incorrect code_verifier",
        }


async def test_redirect_uris_must_be_registered_and_safe(vault: Path) -> None:
    async with served(vault) as site:
        client_id = await register(site)
        _, challenge = pkce()
        # Not the registered URI: an error page here, never a redirect there.
        other = await authorize(site, client_id, challenge, redirect_uri="http://127.0.0.1:9/evil")
        assert other.status_code == 400
        assert "location" not in other.headers
        # The consent page checks again what passed through the browser.
        sent = await authorize(site, client_id, challenge)
        tampered = sent.headers["location"].replace("callback", "evil")
        page = await site.http.get(tampered)
        assert page.status_code == 400
        assert "not registered" in page.text
        # Plain http is for this machine only.
        body = {
            "redirect_uris": ["http://attacker.example/cb"],
            "token_endpoint_auth_method": "none",
        }
        refused = await site.http.post(site.base + "/register", json=body)
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_redirect_uri"
        body["redirect_uris"] = ["https://claude.ai/api/mcp/auth_callback"]
        assert (await site.http.post(site.base + "/register", json=body)).status_code == 201


async def test_the_consent_page_wants_the_owners_secret(vault: Path) -> None:
    async with served(vault) as site:
        client_id = await register(site)
        _, challenge = pkce()
        sent = await authorize(site, client_id, challenge)
        wrong = await consent(site, sent.headers["location"], secret="guess")
        assert wrong.status_code == 401
        assert "Wrong secret" in wrong.text
        assert "location" not in wrong.headers


async def test_a_token_for_another_resource_is_refused(vault: Path) -> None:
    async with served(vault) as site:
        client_id = await register(site)
        _, challenge = pkce()
        elsewhere = await authorize(
            site, client_id, challenge, resource="https://other.example/mcp"
        )
        assert elsewhere.status_code == 302
        assert query_of(elsewhere.headers["location"])["error"] == "invalid_target"
        # A token issued for another address of this server (public_url changed since).
        stored = stored_token(site, client_id, resource="https://old.example/mcp")
        assert (await call_stats(site, stored)).status_code == 401
        assert (await call_stats(site, stored_token(site, client_id))).status_code == 200


async def test_an_expired_token_is_refused_and_cleared_away(vault: Path) -> None:
    async with served(vault) as site:
        client_id = await register(site)
        expired = stored_token(site, client_id, expires_at=int(time.time()) - 1)
        answer = await call_stats(site, expired)
        assert answer.status_code == 401
        await grant(site)  # a consent clears expired tokens from the cache
        assert oauth_grants.get_token(site.state.app.db, expired, "access") is None


def stored_token(
    site: Site, client_id: str, resource: str | None = None, expires_at: int | None = None
) -> str:
    value = secrets.token_urlsafe(32)
    row = oauth_grants.NewToken(
        value=value,
        kind="access",
        client_id=client_id,
        grant_id=secrets.token_hex(8),
        scopes=("weaver:read",),
        resource=resource or site.mcp,
        expires_at=expires_at or int(time.time()) + 600,
    )
    assert oauth_grants.save_tokens(site.state.app.db, [row])
    return value


async def test_grants_survive_a_restart(vault: Path) -> None:
    async with served(vault) as site:
        client_id, tokens = await grant(site)
        port = urlsplit(site.base).port
    assert port is not None
    async with served(vault, port=port) as site:
        assert (await call_stats(site, tokens["access_token"])).status_code == 200
        renewed = await token(site, client_id, refresh_token=tokens["refresh_token"])
        assert renewed.status_code == 200, renewed.text


async def test_a_token_is_bound_to_the_address_it_was_issued_for(vault: Path) -> None:
    async with served(vault) as site:
        _, tokens = await grant(site)
    # Served at another address (a new port, or public_url changed): another audience.
    async with served(vault) as site:
        assert (await call_stats(site, tokens["access_token"])).status_code == 401


async def test_the_clients_page_revokes_a_clients_grants(vault: Path) -> None:
    async with served(vault) as site:
        _, tokens = await grant(site)
        login = await site.http.get(site.base + "/oauth/clients")
        assert 'name="secret"' in login.text and "Phone assistant" not in login.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', login.text)
        assert csrf is not None
        origin = {"origin": site.base}
        form = {"csrf": csrf[1], "secret": OWNER}
        logged = await site.http.post(site.base + "/oauth/clients", data=form, headers=origin)
        assert logged.status_code == 303
        page = await site.http.get(site.base + "/oauth/clients")
        assert "Phone assistant" in page.text
        action = re.search(r'action="(/oauth/clients/[^"]+/revoke)"', page.text)
        assert action is not None
        gone = await site.http.post(site.base + action[1], data={"csrf": csrf[1]}, headers=origin)
        assert gone.status_code == 303
        assert (await call_stats(site, tokens["access_token"])).status_code == 401
        listed = await site.http.get(site.base + "/oauth/clients")
        assert re.search(r'class="grants">0<', listed.text)


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_the_sdks_oauth_client_connects(vault: Path) -> None:
    async with served(vault) as site:
        sent_to: list[str] = []

        async def redirect_handler(url: str) -> None:
            sent_to.append(url)

        async def callback_handler() -> AuthorizationCodeResult:
            # The owner's browser: the authorize URL, the consent page, the redirect back.
            first = await site.http.get(sent_to[-1])
            back = await consent(site, first.headers["location"])
            answer = query_of(back.headers["location"])
            return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"))

        metadata = OAuthClientMetadata(
            client_name="Phone assistant",
            redirect_uris=[AnyUrl(REDIRECT)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        )
        storage = MemoryStorage()
        auth = OAuthClientProvider(site.mcp, metadata, storage, redirect_handler, callback_handler)
        async with httpx2.AsyncClient(auth=auth, timeout=10) as http_client:
            transport = streamable_http_client(site.mcp, http_client=http_client)
            async with Client(transport) as client:
                result = await client.call_tool("get_stats", {})
        assert not result.is_error
        assert storage.tokens is not None and storage.tokens.refresh_token


def test_oauth_needs_the_owners_secret_and_a_reachable_address(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="oauth needs http_token"):
        check_http_settings(Settings(vault=tmp_path, oauth=True))
    with pytest.raises(ConfigError, match="needs public_url"):
        check_http_settings(
            Settings(vault=tmp_path, oauth=True, http_token="t", http_host="0.0.0.0")
        )
    with pytest.raises(ValueError, match="origin alone"):
        Settings(vault=tmp_path, public_url="https://vault.example.com/weaver")


async def test_a_tool_knows_which_client_calls_it(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The access token follows the request into the tool's worker thread: the audit, access
    rules and rate limits read the caller there."""
    seen: list[Caller] = []
    real_answer = envelope.answer

    async def recording(state: ServerState, work: Any, **options: Any) -> Any:
        def work_noting_the_caller() -> Any:
            seen.append(current_caller())
            return work()

        return await real_answer(state, work_noting_the_caller, **options)

    monkeypatch.setattr(catalog, "answer", recording)
    async with served(vault) as site:
        client_id, tokens = await grant(site)
        for bearer in (tokens["access_token"], OWNER):
            headers = {"authorization": f"Bearer {bearer}"}
            async with httpx2.AsyncClient(headers=headers, timeout=10) as http_client:
                transport = streamable_http_client(site.mcp, http_client=http_client)
                async with Client(transport) as client:
                    assert not (await client.call_tool("get_stats", {})).is_error
    assert [(c.kind, c.client_id, c.name) for c in seen] == [
        ("oauth", client_id, "Phone assistant"),
        ("token", "weaver-http-token", "http_token"),
    ]
    assert seen[0].scopes == {"weaver:read", "weaver:write", "weaver:workflows", "weaver:admin"}
    assert current_caller() == LOCAL_CALLER  # outside any request
