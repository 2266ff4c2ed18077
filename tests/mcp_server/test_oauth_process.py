"""`weaver serve --transport http` with `oauth = true` as the process a user starts, behind a
reverse proxy as docs/deployment.md sets one up (minus TLS), reached at the proxy's address,
its `public_url`: the TypeScript SDK's OAuth client connects through it
(discovery, dynamic registration, PKCE, the consent page, tokens, a refresh), it publishes
metadata naming the public_url, and it refuses a token revoked at `/revoke`.

test_oauth.py drives the same server in-process with Python; these check the daemon a client
really meets. The TypeScript test needs Node.js and the SDK (see test_real_clients.py); it
skips without them, saying why, and fails under CI=true."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from tests.helpers import bare_env, free_port, write_files
from tests.mcp_server.reverse_proxy import reverse_proxy
from tests.mcp_server.served_http import HEADERS, LEGACY, rpc
from tests.mcp_server.test_oauth import pkce
from tests.mcp_server.test_real_clients import WEAVER, require_node
from tests.mcp_server.test_transports import http_get, wait_until_healthy

pytestmark = pytest.mark.slow

OWNER = "owner-s3cret-of-the-daemon"
REDIRECT = "http://127.0.0.1:9/callback"
SCRIPT = Path(__file__).with_name("ts_oauth.mjs")


@dataclass(frozen=True)
class Daemon:
    bound: str  # where Weaver listens: http://127.0.0.1:PORT
    public: str  # its public_url, the proxy in front: http://localhost:PROXY_PORT

    @property
    def mcp(self) -> str:
        return self.public + "/mcp"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """`weaver serve --transport http` with oauth, started as a user would, its settings from
    the environment, on loopback behind the proxy whose address is its public_url (another
    port, and `localhost`: no document naming it can have been built from the bind address)."""
    vault = write_files(tmp_path / "vault", {"Plan.md": "# Plan\n#project\n", "Other.md": "x\n"})
    port, proxy_port = free_port(), free_port()
    env = bare_env(
        WEAVER_TOOLSETS="all",
        WEAVER_OAUTH="true",
        WEAVER_HTTP_TOKEN=OWNER,
        WEAVER_PUBLIC_URL=f"http://localhost:{proxy_port}",
    )
    if "PYTHONPATH" in os.environ:  # this checkout's code, when it is not the one installed
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    command = [WEAVER, "--vault", str(vault), "serve", "--transport", "http"]
    log = tmp_path / "server.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
        )
        try:
            bound = f"http://127.0.0.1:{port}"
            wait_until_listening(process, bound, log)
            wait_until_healthy(bound)
            with reverse_proxy(bound, proxy_port):
                yield Daemon(bound, f"http://localhost:{proxy_port}")
        finally:
            process.terminate()
            process.wait(timeout=10)


# A timeout, not a wait: a loaded 2-core run (load 10) took longer than 15 s to start serving.
LISTEN_SECONDS = 60


def wait_until_listening(process: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + LISTEN_SECONDS
    while True:
        assert process.poll() is None, log.read_text()
        try:
            http_get(base + "/health")
            return
        except OSError:
            assert time.monotonic() < deadline, (
                f"not listening after {LISTEN_SECONDS} s:\n{log.read_text()}"
            )
            time.sleep(0.05)


# -- the TypeScript SDK's OAuth client -------------------------------------------------------


@pytest.fixture
def node() -> Path:
    """The folder holding the SDK's node_modules; asked before the daemon starts for nothing."""
    return require_node(("@modelcontextprotocol/sdk",))


def test_the_typescript_sdks_oauth_client_connects_and_refreshes(
    node: Path, tmp_path: Path, daemon: Daemon
) -> None:
    spec = {"url": daemon.mcp, "secret": OWNER, "redirect": REDIRECT, "note": "Plan.md"}
    seen = run_node(node, tmp_path, spec)

    # Every request of the SDK's own (the browser's are not among them), the listening GET
    # streams aside. It rediscovers before each token request: this app caches no discovery.
    discovery = [
        "GET /.well-known/oauth-protected-resource/mcp 200",
        "GET /.well-known/oauth-authorization-server 200",
    ]
    connect = ["POST /mcp 200", "POST /mcp 202"]  # initialize, notifications/initialized
    assert [step for step in seen["requests"] if not step.startswith("GET /mcp")] == [
        # No token: the 401 starts discovery and registration, then the browser's authorize.
        *("POST /mcp 401", *discovery, "POST /register 201"),
        *(*discovery, "POST /token 200"),  # finishAuth: the code and the PKCE verifier
        *(*connect, "POST /mcp 200", "POST /mcp 200"),  # tools/list, tools/call
        # The stale access token: refused, refreshed at /token, initialize sent again.
        *("POST /mcp 401", *discovery, "POST /token 200", *connect, "POST /mcp 200"),
    ]
    assert seen["authorize"]["code_challenge_method"] == "S256"
    assert seen["authorize"]["resource"] == daemon.mcp
    assert seen["authorize"]["client_id"] == seen["registeredClientId"]
    assert seen["consentPageNamesClient"] is True
    assert seen["callback"] == REDIRECT

    assert {"get_file_content", "get_stats", "search_notes"} <= set(seen["tools"])
    assert seen["read"]["isError"] is False
    assert json.loads(seen["read"]["text"])["data"]["content"] == "# Plan\n#project\n"
    assert seen["afterRefresh"]["isError"] is False
    assert json.loads(seen["afterRefresh"]["text"])["data"]["totalFiles"] == 2
    first, renewed = seen["savedTokens"]
    assert renewed["access"] != first["access"]
    assert renewed["refresh"] != first["refresh"]  # rotated

    with httpx2.Client(timeout=10) as http:
        spent = refresh(http, daemon, seen["registeredClientId"], first["refresh"])
        assert spent.status_code == 400
        assert spent.json()["error"] == "invalid_grant"
        assert initialize(http, daemon, renewed["access"]).status_code == 200


def run_node(node: Path, tmp_path: Path, spec: dict[str, Any]) -> Any:
    """What the TypeScript client saw, run by Node from beside the installed SDK."""
    (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    script = node / SCRIPT.name  # beside node_modules, where Node resolves the SDK from
    shutil.copy(SCRIPT, script)
    done = subprocess.run(
        ["node", str(script), str(tmp_path / "spec.json")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(node / "node_modules")},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the daemon's metadata and revocation, driven as a client and a browser would -----------


def test_the_daemon_publishes_its_public_url_and_refuses_a_revoked_token(
    daemon: Daemon,
) -> None:
    with httpx2.Client(timeout=10) as http:
        # Asked at the bound address, the documents still name the public one.
        refused = initialize(http, daemon, "no-such-token", base=daemon.bound)
        assert refused.status_code == 401
        prm_url = daemon.public + "/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{prm_url}"' in refused.headers["www-authenticate"]
        prm = http.get(daemon.bound + "/.well-known/oauth-protected-resource/mcp").json()
        assert prm["resource"] == daemon.mcp
        assert prm["authorization_servers"] == [daemon.public]
        metadata = http.get(daemon.bound + "/.well-known/oauth-authorization-server").json()
        assert metadata["issuer"] == daemon.public
        for endpoint in ("authorization", "token", "registration", "revocation"):
            assert metadata[f"{endpoint}_endpoint"].startswith(daemon.public + "/")
        # No URL client ids: Weaver fetches nothing a client names (deployment.md, SSRF).
        assert not metadata.get("client_id_metadata_document_supported")

        client_id, tokens = grant(http, daemon)
        assert initialize(http, daemon, tokens["access_token"]).status_code == 200

        form = {"token": tokens["access_token"], "client_id": client_id, "client_secret": ""}
        assert http.post(daemon.public + "/revoke", data=form).status_code == 200
        after = initialize(http, daemon, tokens["access_token"])
        assert after.status_code == 401
        assert f'resource_metadata="{prm_url}"' in after.headers["www-authenticate"]
        dead = refresh(http, daemon, client_id, tokens["refresh_token"])
        assert dead.json()["error"] == "invalid_grant"
        # The owner's http_token is not a grant: revoking grants leaves it working.
        assert initialize(http, daemon, OWNER).status_code == 200


def grant(http: httpx2.Client, daemon: Daemon) -> tuple[str, dict[str, Any]]:
    """Registration, authorize with PKCE, the owner's consent, the token request."""
    body = {
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "client_name": "Phone assistant",
    }
    registered = http.post(daemon.public + "/register", json=body)
    assert registered.status_code == 201, registered.text
    client_id = str(registered.json()["client_id"])
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st4te",
        "resource": daemon.mcp,
    }
    sent = http.get(daemon.public + "/authorize", params=params)
    assert sent.status_code == 302, sent.text
    back = consent(http, daemon, sent.headers["location"])
    code = parse_qs(urlsplit(back).query)["code"][0]
    form = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT,
        "resource": daemon.mcp,
    }
    tokens = http.post(daemon.public + "/token", data=form)
    assert tokens.status_code == 200, tokens.text
    return client_id, tokens.json()


def consent(http: httpx2.Client, daemon: Daemon, consent_url: str) -> str:
    """The owner's browser on the consent page: the secret, Allow; where it is sent back."""
    assert consent_url.startswith(daemon.public + "/oauth/consent?")
    page = http.get(consent_url)
    assert page.status_code == 200, page.text
    fields = {
        html.unescape(name): html.unescape(value)
        for name, value in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text
        )
    }
    form = {**fields, "secret": OWNER, "decision": "allow"}
    headers = {"origin": daemon.public}
    back = http.post(daemon.public + "/oauth/consent", data=form, headers=headers)
    assert back.status_code == 303, back.text
    return back.headers["location"]


def refresh(http: httpx2.Client, daemon: Daemon, client_id: str, token: str) -> httpx2.Response:
    form = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": token}
    return http.post(daemon.public + "/token", data=form)


def initialize(
    http: httpx2.Client, daemon: Daemon, bearer: str, base: str | None = None
) -> httpx2.Response:
    """An MCP initialize with the bearer token, the first request any client sends."""
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t"}}
    headers = {**HEADERS, "authorization": f"Bearer {bearer}"}
    url = (base or daemon.public) + "/mcp"
    return http.post(url, json=rpc("initialize", params), headers=headers)
