"""Weaver's own OAuth 2.1 authorization server, for the one owner of a vault (`oauth = true`).

The MCP SDK serves the protocol (metadata, registration, authorize, token, revoke, the bearer
check on `/mcp`, PKCE and redirect URI checks at the token endpoint): `OwnerAuthorizationServer`
is the provider it calls, keeping clients, codes and tokens in the cache (`cache.oauth_grants`).
The authorize step sends the owner's browser to the consent page (`dashboard.oauth_pages`),
which asks for the owner's secret (`http_token`) and then calls `issue_code`.

Codes and tokens are opaque random values (`secrets`), stored as hashes; every token is bound
to this server's MCP URL (RFC 8707), which the SDK's bearer check compares on every request,
and looked up in the cache on every request, so a revoked one is refused at once.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import anyio.to_thread
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import InvalidRedirectUriError, InvalidScopeError, OAuthClientInformationFull
from mcp.shared.auth import OAuthToken as IssuedTokens
from pydantic import AnyHttpUrl, AnyUrl, ValidationError
from sqlalchemy import Engine

from weaver.cache import oauth_grants
from weaver.cache.oauth_grants import ClientSummary, NewToken, TokenKind
from weaver.config import Settings
from weaver.errors import OAuthRequestError
from weaver.runtime.http import MCP_PATH, is_loopback

# read: every read tool; write: the tools that change notes; workflows: running them; admin:
# the dashboard's actions. Every OAuth client gets them all for now (see docs/deployment.md).
SCOPES = ("weaver:read", "weaver:write", "weaver:workflows", "weaver:admin")
CONSENT_PATH = "/oauth/consent"
CODE_LIFETIME_S = 300
HTTP_TOKEN_CLIENT = "weaver-http-token"
TOKEN_BYTES = 32  # 256 bits, beyond guessing (RFC 6749 10.10 asks for 128 at least)


@dataclass(frozen=True, slots=True)
class OAuthUrls:
    """Where clients reach this server: the issuer, and the MCP URL tokens are bound to."""

    base: str

    @property
    def resource(self) -> str:
        return self.base + MCP_PATH

    @property
    def consent(self) -> str:
        return self.base + CONSENT_PATH


def oauth_urls(settings: Settings) -> OAuthUrls:
    if settings.public_url:
        return OAuthUrls(settings.public_url)
    host = settings.http_host
    host = f"[{host.strip('[]')}]" if ":" in host else host
    return OAuthUrls(f"http://{host}:{settings.http_port}")


def auth_settings(settings: Settings) -> AuthSettings:
    """The SDK's settings for an authorization server and resource server in one process."""
    urls = oauth_urls(settings)
    return AuthSettings(
        issuer_url=urls.base,
        resource_server_url=urls.resource,
        validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=list(SCOPES), default_scopes=list(SCOPES)
        ),
        revocation_options=RevocationOptions(enabled=True),
    )


def same_resource(given: str, ours: str) -> bool:
    """RFC 8707 indicators compared as URLs, a trailing slash aside."""
    try:
        return str(AnyHttpUrl(given)).rstrip("/") == str(AnyHttpUrl(ours)).rstrip("/")
    except ValidationError:
        return False


def redirect_uri_allowed(uri: str) -> bool:
    """https anywhere, http only back to this machine (OAuth 2.1 and the MCP spec); and
    private-use schemes (`com.example.app:/cb`) of native apps."""
    parsed = urlsplit(uri)
    if parsed.fragment:
        return False
    if parsed.scheme == "https":
        return bool(parsed.hostname)
    if parsed.scheme == "http":
        return bool(parsed.hostname) and is_loopback(parsed.hostname or "")
    return "." in parsed.scheme and not parsed.netloc


class GrantCode(AuthorizationCode):
    grant_id: str


class GrantRefreshToken(RefreshToken):
    grant_id: str


class GrantAccessToken(AccessToken):
    grant_id: str
    client_name: str = ""


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """An authorization request waiting for the owner's yes, as the consent page carries it."""

    client_id: str
    client_name: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    state: str | None
    scopes: tuple[str, ...]
    resource: str

    def fields(self) -> dict[str, str]:
        """The request as the consent URL's query and the form's hidden fields."""
        fields = {
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "redirect_uri_explicit": "1" if self.redirect_uri_explicit else "0",
            "code_challenge": self.code_challenge,
            "scope": " ".join(self.scopes),
            "resource": self.resource,
        }
        if self.state is not None:
            fields["state"] = self.state
        return fields


class OwnerAuthorizationServer(
    OAuthAuthorizationServerProvider[GrantCode, GrantRefreshToken, AccessToken]
):
    """The SDK's provider over the cache (see the module docstring); the SDK's refusal of the
    identity-assertion grant is inherited. It keeps nothing in memory: any number of them over
    one cache agree."""

    def __init__(self, db: Engine, settings: Settings) -> None:
        self.db = db
        self.urls = oauth_urls(settings)
        self.access_lifetime = settings.oauth_access_token_s
        self.refresh_lifetime = settings.oauth_refresh_token_s
        self._owner_token = (settings.http_token or "").encode()

    # -- clients ---------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        info = await anyio.to_thread.run_sync(oauth_grants.get_client_info, self.db, client_id)
        return None if info is None else OAuthClientInformationFull.model_validate(info)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        refused = [
            str(u) for u in client_info.redirect_uris or [] if not redirect_uri_allowed(str(u))
        ]
        if refused:
            raise RegistrationError(
                "invalid_redirect_uri",
                f"redirect URIs must be https, or http to a loopback address: {refused[0]}",
            )
        name = client_info.client_name or client_info.client_id or "unnamed client"
        info = client_info.model_dump(mode="json", exclude_none=True)
        await anyio.to_thread.run_sync(
            oauth_grants.save_client, self.db, str(client_info.client_id), name, info
        )

    async def list_clients(self) -> list[ClientSummary]:
        return await anyio.to_thread.run_sync(oauth_grants.list_clients, self.db, int(time.time()))

    async def revoke_client(self, client_id: str) -> int:
        return await anyio.to_thread.run_sync(oauth_grants.revoke_client, self.db, client_id)

    # -- authorize and consent -------------------------------------------------------------

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Send the owner to the consent page, once the request is one it could accept."""
        if params.resource is not None and not same_resource(params.resource, self.urls.resource):
            raise AuthorizeError("invalid_target", f"this server grants only {self.urls.resource}")
        scopes = params.scopes or (client.scope.split() if client.scope else list(SCOPES))
        request = ConsentRequest(
            client_id=str(client.client_id),
            client_name=client.client_name or str(client.client_id),
            redirect_uri=str(params.redirect_uri),
            redirect_uri_explicit=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            state=params.state,
            scopes=tuple(scopes),
            resource=self.urls.resource,
        )
        return f"{self.urls.consent}?{urlencode(request.fields())}"

    async def consent_request(self, fields: Mapping[str, str]) -> ConsentRequest:
        """The request the consent page was sent (or posted back), checked again from scratch:
        its fields passed through the browser, so nothing in them is trusted."""
        client_id = fields.get("client_id", "")
        client = await self.get_client(client_id) if client_id else None
        if client is None:
            raise OAuthRequestError("unknown client: it must register first")
        try:
            redirect = client.validate_redirect_uri(AnyUrl(fields.get("redirect_uri", "")))
            scopes = client.validate_scope(fields.get("scope") or None) or list(SCOPES)
        except (InvalidRedirectUriError, InvalidScopeError, ValidationError) as exc:
            raise OAuthRequestError(f"the request cannot be granted: {exc}") from None
        if not set(scopes) <= set(SCOPES):
            raise OAuthRequestError(f"unknown scope: {sorted(set(scopes) - set(SCOPES))[0]}")
        if not same_resource(fields.get("resource", ""), self.urls.resource):
            raise OAuthRequestError(f"this server grants only {self.urls.resource}")
        challenge = fields.get("code_challenge", "")
        if not challenge:
            raise OAuthRequestError("the request has no PKCE code_challenge")
        return ConsentRequest(
            client_id=client_id,
            client_name=client.client_name or client_id,
            redirect_uri=str(redirect),
            redirect_uri_explicit=fields.get("redirect_uri_explicit") == "1",
            code_challenge=challenge,
            state=fields.get("state"),
            scopes=tuple(scopes),
            resource=self.urls.resource,
        )

    def owner_secret_matches(self, given: str) -> bool:
        return bool(self._owner_token) and hmac.compare_digest(given.encode(), self._owner_token)

    async def issue_code(self, request: ConsentRequest) -> str:
        """The owner said yes: a code for the client, and the redirect that carries it."""
        code = secrets.token_urlsafe(TOKEN_BYTES)
        remembered = {
            "code_challenge": request.code_challenge,
            "redirect_uri": request.redirect_uri,
            "redirect_uri_explicit": request.redirect_uri_explicit,
        }
        token = NewToken(
            value=code,
            kind="code",
            client_id=request.client_id,
            grant_id=secrets.token_hex(16),
            scopes=request.scopes,
            resource=request.resource,
            expires_at=int(time.time()) + CODE_LIFETIME_S,
            data=remembered,
        )
        await anyio.to_thread.run_sync(oauth_grants.save_tokens, self.db, [token])
        # Expired codes and tokens are refused anyway; a consent, rare, clears them away.
        await anyio.to_thread.run_sync(oauth_grants.prune_expired, self.db, int(time.time()))
        return construct_redirect_uri(request.redirect_uri, code=code, state=request.state)

    @staticmethod
    def denial(request: ConsentRequest) -> str:
        return construct_redirect_uri(
            request.redirect_uri,
            error="access_denied",
            error_description="the owner refused",
            state=request.state,
        )

    # -- the token endpoint ----------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> GrantCode | None:
        found = await anyio.to_thread.run_sync(
            oauth_grants.get_token, self.db, authorization_code, "code"
        )
        if found is None or found.client_id != client.client_id or found.data is None:
            return None
        return GrantCode(
            code=authorization_code,
            scopes=list(found.scopes),
            expires_at=float(found.expires_at),
            client_id=found.client_id,
            code_challenge=str(found.data["code_challenge"]),
            redirect_uri=AnyUrl(str(found.data["redirect_uri"])),
            redirect_uri_provided_explicitly=bool(found.data["redirect_uri_explicit"]),
            resource=found.resource,
            grant_id=found.grant_id,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: GrantCode
    ) -> IssuedTokens:
        code = authorization_code
        if code.resource is None or not same_resource(code.resource, self.urls.resource):
            raise TokenError("invalid_target", f"this server grants only {self.urls.resource}")
        issued = await self._issue(
            code.client_id, code.grant_id, code.scopes, code.scopes, code.code
        )
        if issued is None:
            # A code presented twice: whoever holds it may have stolen it (RFC 6749 4.1.2).
            await anyio.to_thread.run_sync(oauth_grants.revoke_grant, self.db, code.grant_id)
            raise TokenError("invalid_grant", "authorization code already used")
        return issued

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> GrantRefreshToken | None:
        found = await anyio.to_thread.run_sync(
            oauth_grants.get_token, self.db, refresh_token, "refresh"
        )
        if found is None or found.client_id != client.client_id:
            return None
        return GrantRefreshToken(token=refresh_token, **_grant_fields(found))

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: GrantRefreshToken,
        scopes: list[str],
    ) -> IssuedTokens:
        """Rotation: the refresh token is spent, a new one issued with the access token."""
        old = refresh_token
        issued = await self._issue(old.client_id, old.grant_id, scopes, old.scopes, old.token)
        if issued is None:
            raise TokenError("invalid_grant", "refresh token already used")
        return issued

    async def _issue(
        self, client_id: str, grant_id: str, scopes: list[str], grant_scopes: list[str], spent: str
    ) -> IssuedTokens | None:
        now = int(time.time())
        access, refresh = secrets.token_urlsafe(TOKEN_BYTES), secrets.token_urlsafe(TOKEN_BYTES)
        tokens = [
            self._token(access, "access", client_id, grant_id, scopes, now + self.access_lifetime),
            self._token(
                refresh, "refresh", client_id, grant_id, grant_scopes, now + self.refresh_lifetime
            ),
        ]
        saved = await anyio.to_thread.run_sync(oauth_grants.save_tokens, self.db, tokens, spent)
        if not saved:
            return None
        return IssuedTokens(
            access_token=access,
            expires_in=self.access_lifetime,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    def _token(
        self,
        value: str,
        kind: TokenKind,
        client_id: str,
        grant_id: str,
        scopes: list[str],
        expires_at: int,
    ) -> NewToken:
        return NewToken(
            value, kind, client_id, grant_id, tuple(scopes), self.urls.resource, expires_at
        )

    # -- the resource server ---------------------------------------------------------------

    async def load_access_token(self, token: str) -> AccessToken | None:
        """Every MCP request's token: `http_token` (scripts), or an OAuth access token that
        exists (not revoked) and has not expired. The SDK then checks its resource."""
        if self.owner_secret_matches(token):
            return AccessToken(
                token=token,
                client_id=HTTP_TOKEN_CLIENT,
                scopes=list(SCOPES),
                resource=self.urls.resource,
            )
        found = await anyio.to_thread.run_sync(oauth_grants.get_token, self.db, token, "access")
        if found is None or found.expires_at < time.time():
            return None
        return GrantAccessToken(token=token, client_name=found.client_name, **_grant_fields(found))

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """RFC 7009: revoking either token of a grant revokes the grant. `http_token` is not
        revocable here: it is the owner's, changed in the config."""
        if isinstance(token, GrantAccessToken | GrantRefreshToken):
            await anyio.to_thread.run_sync(oauth_grants.revoke_grant, self.db, token.grant_id)


def _grant_fields(found: oauth_grants.StoredToken) -> dict[str, Any]:
    """What the SDK's token models take of a stored code or token, besides its value."""
    return {
        "client_id": found.client_id,
        "scopes": list(found.scopes),
        "expires_at": found.expires_at,
        "resource": found.resource,
        "grant_id": found.grant_id,
    }
