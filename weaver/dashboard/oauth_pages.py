"""The owner's side of OAuth (`oauth = true`): the consent page and the clients page, mounted at
`/oauth` beside `/mcp` by both `weaver daemon` and `weaver serve --transport http`.

- `/oauth/consent` is where the authorization endpoint sends the owner's browser. It names the
  client and the scopes, and asks for the owner's secret (`http_token`) with every yes: a
  consent is rare, and the page is reachable from anywhere the server is, so no cookie alone
  may grant a client the vault. The owner may leave some of the scopes out of the grant
  (`WITHHOLD` boxes). Yes redirects to the client with a code and its `state`; no
  with `access_denied`.
- `/oauth/clients` lists the registered clients and their live grants, each with a button that
  revokes them (the client's tokens stop working at its next request). It needs the dashboard's
  session cookie, set by entering the secret here or at the dashboard's `/login`.

Every POST carries the dashboard's CSRF token, and the guard's Host and Origin checks apply.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from jinja2 import Environment
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from weaver.dashboard.render import build_templates
from weaver.dashboard.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SECURITY_HEADERS,
    SESSION_COOKIE,
    DashboardGuard,
    csrf_valid,
    new_csrf_token,
    session_value,
)
from weaver.errors import OAuthRequestError
from weaver.runtime.oauth_server import OwnerAuthorizationServer

MAX_FORM_BYTES = 100_000
Handler = Callable[[Request], Awaitable[Response]]

# A consent form's checkbox leaving a scope out of the grant: `withhold:weaver:write`. Ticked
# to leave out, so a form sent without the boxes grants what was asked, as before.
WITHHOLD = "withhold:"
# What each scope lets a client do, as the consent page says it.
SCOPE_MEANINGS = {
    "weaver:read": "read every note, tag, link, task and search",
    "weaver:write": "change, move and delete notes",
    "weaver:workflows": "run workflows",
    "weaver:admin": "administer Weaver",
}


def _headers_without_form_action() -> list[tuple[bytes, bytes]]:
    """The dashboard's headers, but a form may lead off the site: the consent form's answer
    is a redirect to the client's own address, which `form-action 'self'` would block."""
    headers = []
    for name, value in SECURITY_HEADERS:
        if name == b"content-security-policy":
            kept = [p for p in value.split(b"; ") if not p.startswith(b"form-action")]
            value = b"; ".join(kept)
        headers.append((name, value))
    return headers


class PageError(Exception):
    """A request the page refuses: its status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class OAuthPages:
    """The `/oauth` pages over one authorization server; `asgi()` is what the host mounts."""

    def __init__(
        self,
        server: OwnerAuthorizationServer,
        owner_token: str,
        bind_host: str,
        public_url: str | None,
    ) -> None:
        self.server = server
        self.session = session_value(owner_token)
        self.bind_host = bind_host
        self.public_url = public_url
        self.templates: Environment = build_templates()

    def asgi(self) -> ASGIApp:
        routes = [
            Route("/consent", self._page(self.consent), methods=["GET", "POST"]),
            Route("/clients", self._page(self.clients), methods=["GET", "POST"]),
            Route("/clients/{client_id}/revoke", self._page(self.revoke), methods=["POST"]),
        ]
        headers = _headers_without_form_action()
        return DashboardGuard(
            Starlette(routes=routes), self.bind_host, None, headers, self.public_url
        )

    # -- rendering -------------------------------------------------------------------------

    def render(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> Response:
        csrf = request.cookies.get(CSRF_COOKIE)
        token = csrf or new_csrf_token()
        html = self.templates.get_template(template).render(
            csrf=token,
            csrf_field=CSRF_FIELD,
            scope_meanings=SCOPE_MEANINGS,
            withhold=WITHHOLD,
            **context,
        )
        response = HTMLResponse(html, status_code=status)
        if csrf is None:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/")
        return response

    def _page(self, handler: Handler) -> Handler:
        async def page(request: Request) -> Response:
            try:
                return await handler(request)
            except PageError as exc:
                return self.render(request, "oauth_error.html", exc.status, message=str(exc))
            except OAuthRequestError as exc:
                return self.render(request, "oauth_error.html", 400, message=str(exc))

        return page

    async def read_form(self, request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise PageError(413, "The form is too large")
        fields = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if not csrf_valid(request.cookies.get(CSRF_COOKIE), fields.get(CSRF_FIELD)):
            raise PageError(403, "The form's CSRF token is missing or wrong: reload the page")
        return fields

    def logged_in(self, request: Request) -> bool:
        cookie = request.cookies.get(SESSION_COOKIE)
        return cookie is not None and csrf_valid(cookie, self.session)

    # -- pages -----------------------------------------------------------------------------

    async def consent(self, request: Request) -> Response:
        if request.method == "GET":
            asked = await self.server.consent_request(dict(request.query_params))
            return self.render(request, "oauth_consent.html", ask=asked, error=None)
        form = await self.read_form(request)
        asked = await self.server.consent_request(form)
        if form.get("decision") != "allow":
            return RedirectResponse(self.server.denial(asked), status_code=303)
        if not self.server.owner_secret_matches(form.get("secret", "")):
            error = "Wrong secret: enter this Weaver's http_token"
            return self.render(request, "oauth_consent.html", 401, ask=asked, error=error)
        # The owner may leave out some of the scopes asked for: the grant holds the rest.
        kept = tuple(scope for scope in asked.scopes if not form.get(WITHHOLD + scope))
        if not kept:
            error = "Every scope is left out, so there is nothing to allow: press Deny instead"
            return self.render(request, "oauth_consent.html", 400, ask=asked, error=error)
        granted = dataclasses.replace(asked, scopes=kept)
        return RedirectResponse(await self.server.issue_code(granted), status_code=303)

    async def clients(self, request: Request) -> Response:
        if request.method == "POST":
            form = await self.read_form(request)
            if not self.server.owner_secret_matches(form.get("secret", "")):
                return self.render(
                    request, "oauth_clients.html", 401, clients=None, error="Wrong secret"
                )
            response = RedirectResponse("/oauth/clients", status_code=303)
            response.set_cookie(
                SESSION_COOKIE, self.session, httponly=True, samesite="strict", path="/"
            )
            return response
        if not self.logged_in(request):
            return self.render(request, "oauth_clients.html", clients=None, error=None)
        found = await self.server.list_clients()
        return self.render(request, "oauth_clients.html", clients=found, error=None)

    async def revoke(self, request: Request) -> Response:
        await self.read_form(request)
        if not self.logged_in(request):
            raise PageError(401, "Log in first: /oauth/clients")
        await self.server.revoke_client(request.path_params["client_id"])
        return RedirectResponse("/oauth/clients", status_code=303)
