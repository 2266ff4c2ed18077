"""The dashboard's guard: the same rules as `/mcp`, in a browser's terms.

- Bound to loopback, the Host header must name a loopback address and an Origin header, when
  sent, a loopback origin: a web page elsewhere cannot reach the dashboard by DNS rebinding.
- With a token (`http_token`, required off loopback), every page but `/login` and `/static/`
  needs the session cookie, which `/login` sets once the token is entered: `HttpOnly` (scripts
  cannot read it), `SameSite=Strict` (no other site's page sends it). The cookie holds an HMAC
  of the token, never the token itself.
- Every POST carries a CSRF token: a random value in a `SameSite=Strict` cookie that the form
  repeats (double submit); a POST whose Origin is not the dashboard's own is refused as well.
- Every response forbids inline script and framing (Content-Security-Policy): even markup that
  slipped through would not run.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from urllib.parse import quote, urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from weaver.runtime.http import is_loopback

SESSION_COOKIE = "weaver_session"
CSRF_COOKIE = "weaver_csrf"
CSRF_FIELD = "csrf"
OPEN_PREFIXES = ("/login", "/static/")
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def session_value(token: str) -> str:
    """What the session cookie holds: proof of the token that is not the token."""
    return hmac.new(token.encode(), b"weaver-dashboard-session", hashlib.sha256).hexdigest()


def token_matches(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def new_csrf_token() -> str:
    return secrets.token_urlsafe(24)


def csrf_valid(cookie: str | None, submitted: str | None) -> bool:
    return bool(cookie and submitted) and hmac.compare_digest(str(cookie), str(submitted))


def _hostname(value: str) -> str:
    """The host of a Host header or an origin's netloc, without port or brackets."""
    parsed = urlsplit(f"//{value}")
    return (parsed.hostname or "").lower()


class DashboardGuard:
    """ASGI middleware in front of the dashboard's routes (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        bind_host: str,
        token: str | None,
        headers: Sequence[tuple[bytes, bytes]] = SECURITY_HEADERS,
        public_origin: str | None = None,
    ) -> None:
        self.app = app
        self.loopback = is_loopback(bind_host)
        bare = bind_host.strip("[]").lower()
        self.allowed_hosts = LOOPBACK_NAMES | {bare}
        self.token = token
        self.session = session_value(token) if token else None
        self.headers = list(headers)
        # `public_url`: behind a TLS proxy the browser's Origin is the proxy's, not the Host
        # the proxy forwards.
        self.public_origin = public_origin.lower() if public_origin else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, self._with_headers(send))
            return
        await self.app(scope, receive, self._with_headers(send))

    def refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        origin = headers.get("origin")
        if self.loopback and _hostname(host) not in self.allowed_hosts:
            return PlainTextResponse("Invalid Host header", status_code=421)
        if origin is not None and not self._same_origin(origin, host):
            return PlainTextResponse("Cross-origin request refused", status_code=403)
        path = scope.get("path", "/")
        if self.session is None or path.startswith(OPEN_PREFIXES):
            return None
        cookie = _cookie(headers, SESSION_COOKIE)
        if cookie is not None and hmac.compare_digest(cookie, self.session):
            return None
        if scope.get("method") == "GET" and path != "/events":
            return RedirectResponse(f"/login?next={_quote_next(scope)}", status_code=303)
        return PlainTextResponse("Log in first: /login", status_code=401)

    def _same_origin(self, origin: str, host: str) -> bool:
        if self.public_origin is not None and origin.lower() == self.public_origin:
            return True
        netloc = urlsplit(origin).netloc.lower()
        if self.loopback:
            return _hostname(netloc) in self.allowed_hosts and netloc == host.lower()
        return netloc == host.lower()

    def _with_headers(self, send: Send) -> Send:
        async def sender(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *self.headers]
            await send(message)

        return sender


def _cookie(headers: Headers, name: str) -> str | None:
    for part in headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _quote_next(scope: Scope) -> str:
    path = scope.get("path", "/")
    query = scope.get("query_string", b"").decode("latin-1")
    return quote(f"{path}?{query}" if query else path, safe="")


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this site only (never `//evil` or a URL)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
