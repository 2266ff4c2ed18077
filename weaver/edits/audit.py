"""Reading the audit log: which client made each write by Weaver, filtered and a page at a time.

The one reader behind `weaver audit`, the dashboard's audit page and the `get_audit_log` tool.
What the filters mean (`AuditQuery`): `client` is a client id or name ("cli", a workflow id,
an OAuth client's name), `note` a note's path or a folder ending in "/", `since` an age ("30m",
"12h", "7d") or an ISO 8601 date or time (UTC unless it says otherwise).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from sqlalchemy import Engine

from weaver.cache import audit_log
from weaver.cache.audit_log import AuditFilter
from weaver.cache.journal import now_ms
from weaver.errors import WeaverError

AGE = re.compile(r"(\d+)\s*([smhdw])")
UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


class AuditQueryError(WeaverError):
    """A filter of the audit log that cannot be read (names the filter and the forms it takes)."""


@dataclass(frozen=True, slots=True)
class AuditItem:
    """One note's write: who, with what, when, and what became of it."""

    at: str  # ISO 8601, UTC
    caller_kind: str  # local, token, oauth, cli, workflow
    client_id: str
    client_name: str
    tool: str
    path: str
    edit_id: int
    outcome: str  # written, skipped, failed; pending while the write runs
    detail: str | None


@dataclass(frozen=True, slots=True)
class AuditPage:
    items: tuple[AuditItem, ...]
    total: int
    offset: int

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.items) < self.total


def parse_since(text: str, now: int | None = None) -> int:
    """`text` as Unix milliseconds: an age before `now` ("90m", "7d") or an ISO date/time."""
    clean = text.strip().lower()
    age = AGE.fullmatch(clean)
    if age is not None:
        return (now_ms() if now is None else now) - int(age[1]) * UNIT_MS[age[2]]
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise AuditQueryError(
            f"since: cannot read {text!r}; expected an age (30m, 12h, 7d, 2w) or an ISO 8601 "
            "date or time (2026-11-01, 2026-11-01T08:00)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def read_audit(
    db: Engine,
    *,
    client: str | None = None,
    note: str | None = None,
    since: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> AuditPage:
    """The writes matching the filters (empty ones ignored), newest first, one page."""
    where = AuditFilter(
        client=(client or "").strip() or None,
        note=(note or "").strip().lstrip("/") or None,
        since=parse_since(since) if since and since.strip() else None,
    )
    with db.connect() as conn:
        rows, total = audit_log.list_entries(conn, where, limit, offset)
    items = tuple(
        AuditItem(
            at=_iso(row.at),
            caller_kind=row.caller_kind,
            client_id=row.client_id,
            client_name=row.client_name,
            tool=row.tool,
            path=row.path,
            edit_id=row.edit_id,
            outcome=row.outcome,
            detail=row.detail,
        )
        for row in rows
    )
    return AuditPage(items, total, offset)


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")
