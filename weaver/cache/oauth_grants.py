"""What Weaver's OAuth authorization server keeps: registered clients, and the codes and tokens
issued to them, each stored as the SHA-256 of its value.

Codes and tokens are random strings of 256 bits (`runtime.oauth_server`), so a plain hash is
as good as a slow one: nobody can guess a value from its hash. A value is found by its hash,
and the hash read back is compared in constant time before it is trusted.

A grant is one consent and everything issued from it (its code, then each access and refresh
token of its refresh chain): they share `grant_id`, and revoking one revokes the grant.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from sqlalchemy import Engine, Table, delete, func, insert, select

from weaver.cache.models import OAuthClient, OAuthToken

TokenKind = Literal["code", "access", "refresh"]

_CLIENTS = cast(Table, OAuthClient.__table__)
_TOKENS = cast(Table, OAuthToken.__table__)


def hash_value(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class NewToken:
    """A code or token to store: its value is hashed here and never kept."""

    value: str
    kind: TokenKind
    client_id: str
    grant_id: str
    scopes: tuple[str, ...]
    resource: str | None
    expires_at: int
    data: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class StoredToken:
    kind: TokenKind
    client_id: str
    grant_id: str
    scopes: tuple[str, ...]
    resource: str | None
    expires_at: int
    data: dict[str, Any] | None
    client_name: str = ""  # as registered: what the audit and the clients page show


@dataclass(frozen=True, slots=True)
class ClientSummary:
    """A registered client as the clients page lists it: its live grants and tokens."""

    client_id: str
    name: str
    registered_at: int
    grants: int
    last_issued_at: int | None


def save_client(db: Engine, client_id: str, name: str, info: dict[str, Any]) -> None:
    row = {
        "client_id": client_id,
        "name": name,
        "info": info,
        "registered_at": int(time.time() * 1000),
    }
    with db.begin() as conn:
        conn.execute(insert(_CLIENTS).values(row))


def get_client_info(db: Engine, client_id: str) -> dict[str, Any] | None:
    with db.connect() as conn:
        found = conn.execute(
            select(_CLIENTS.c.info).where(_CLIENTS.c.client_id == client_id)
        ).scalar()
    return cast(dict[str, Any] | None, found)


def list_clients(db: Engine, now: int) -> list[ClientSummary]:
    """Every registered client, the newest first, with the grants it holds unexpired."""
    live = (
        select(
            _TOKENS.c.client_id,
            func.count(func.distinct(_TOKENS.c.grant_id)).label("grants"),
            func.max(_TOKENS.c.issued_at).label("last"),
        )
        .where(_TOKENS.c.expires_at >= now, _TOKENS.c.kind != "code")
        .group_by(_TOKENS.c.client_id)
        .subquery()
    )
    query = (
        select(
            _CLIENTS.c.client_id,
            _CLIENTS.c.name,
            _CLIENTS.c.registered_at,
            func.coalesce(live.c.grants, 0),
            live.c.last,
        )
        .outerjoin(live, live.c.client_id == _CLIENTS.c.client_id)
        .order_by(_CLIENTS.c.registered_at.desc(), _CLIENTS.c.client_id)
    )
    with db.connect() as conn:
        rows = conn.execute(query).all()
    return [ClientSummary(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def save_tokens(db: Engine, tokens: Sequence[NewToken], replacing: str | None = None) -> bool:
    """Store `tokens`; with `replacing`, only if that code or token (a value) still exists,
    deleting it in the same transaction. False when it did not: a code used twice, or a
    refresh token rotated by a concurrent request, issues nothing."""
    issued = int(time.time() * 1000)
    with db.begin() as conn:
        if replacing is not None:
            gone = conn.execute(
                delete(_TOKENS).where(_TOKENS.c.token_hash == hash_value(replacing))
            )
            if gone.rowcount != 1:
                return False
        conn.execute(insert(_TOKENS), [_row(token, issued) for token in tokens])
    return True


def _row(token: NewToken, issued: int) -> dict[str, Any]:
    return {
        "token_hash": hash_value(token.value),
        "kind": token.kind,
        "client_id": token.client_id,
        "grant_id": token.grant_id,
        "scopes": " ".join(token.scopes),
        "resource": token.resource,
        "expires_at": token.expires_at,
        "issued_at": issued,
        "data": token.data,
    }


def get_token(db: Engine, value: str, kind: TokenKind) -> StoredToken | None:
    """The code or token of this value and kind, expired or not (the caller decides)."""
    wanted = hash_value(value)
    query = select(
        _TOKENS.c.token_hash,
        _TOKENS.c.client_id,
        _TOKENS.c.grant_id,
        _TOKENS.c.scopes,
        _TOKENS.c.resource,
        _TOKENS.c.expires_at,
        _TOKENS.c.data,
        _CLIENTS.c.name,
    )
    query = query.join(_CLIENTS, _CLIENTS.c.client_id == _TOKENS.c.client_id, isouter=True)
    query = query.where(_TOKENS.c.token_hash == wanted, _TOKENS.c.kind == kind)
    with db.connect() as conn:
        row = conn.execute(query).first()
    if row is None or not hmac.compare_digest(row[0], wanted):
        return None
    scopes = tuple(row[3].split()) if row[3] else ()
    return StoredToken(kind, row[1], row[2], scopes, row[4], row[5], row[6], row[7] or row[1])


def revoke_grant(db: Engine, grant_id: str) -> int:
    """Delete the grant's code and tokens; how many there were."""
    with db.begin() as conn:
        return conn.execute(delete(_TOKENS).where(_TOKENS.c.grant_id == grant_id)).rowcount


def revoke_client(db: Engine, client_id: str) -> int:
    """Delete every code and token of the client (its registration stays)."""
    with db.begin() as conn:
        return conn.execute(delete(_TOKENS).where(_TOKENS.c.client_id == client_id)).rowcount


def prune_expired(db: Engine, now: int) -> int:
    with db.begin() as conn:
        return conn.execute(delete(_TOKENS).where(_TOKENS.c.expires_at < now)).rowcount
