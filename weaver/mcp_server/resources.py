"""MCP resources: each note (`weaver://note/{+path}`, text/markdown), listed in pages with
cursors, two vault-level resources (stats, tags), today's tasks (`weaver://tasks/today`,
`task_resources`), a base's view (`weaver://base/{+path}`, `base_resources`), an attachment
(`weaver://attachment/{+path}`, `attachment_resources`), each tool's help
(`weaver://help/{tool}`, `tool_help`), and subscriptions.

A server of several vaults (`mcp_server.vaults`) serves the default vault's resources at these
URIs, and every vault's at the same URIs under `weaver://vaults/{vault}/` (its note
`weaver://vaults/home/note/a.md`, its stats `weaver://vaults/home/vault/stats`); a subscription
hears of changes in the vault its URI names.

A client subscribed to a note's URI gets `notifications/resources/updated` when the indexer
applies a change to it (the watcher's batch, through the event bus); a client that subscribed
to anything or listed resources gets `notifications/resources/list_changed` when notes are
added, deleted or moved, at most once per `LIST_CHANGED_DEBOUNCE` seconds; a client subscribed
to a computed resource (today's tasks, a base's view) hears of a batch that changed what it
reads, at most once per that time too. Handlers are registered on the low-level server with its
`add_request_handler` (the SDK's hook for methods MCPServer does not serve as needed: cursors,
subscriptions).
"""

from __future__ import annotations

import asyncio
import base64
import json
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import anyio.to_thread
import structlog
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    BlobResourceContents,
    EmptyResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SubscribeRequestParams,
    TextResourceContents,
    UnsubscribeRequestParams,
)

from weaver.cache import browse, read
from weaver.errors import AccessDeniedError, WeaverError, did_you_mean, suggest
from weaver.mcp_server import attachment_resources, base_resources, task_resources
from weaver.mcp_server.access import current_grant, reading_refusal, scope_of
from weaver.mcp_server.content import decode
from weaver.mcp_server.tool_help import HELP_TEMPLATE, ToolHelp, help_name
from weaver.mcp_server.vaults import VaultRouting
from weaver.runtime.state import ServerState
from weaver.vault.events import NoteAdded, NoteDeleted, NoteModified, NoteMoved, VaultEvent

log = structlog.get_logger(__name__)

NOTE_PREFIX = "weaver://note/"
NOTE_TEMPLATE = NOTE_PREFIX + "{+path}"
STATS_URI = "weaver://vault/stats"
TAGS_URI = "weaver://vault/tags"
MARKDOWN = "text/markdown"
PAGE_SIZE = 100  # small enough to answer as fast as the read tools (docs/benchmarks-notes.md)
TAGS_LISTED = 1_000
LIST_CHANGED_DEBOUNCE = 0.5


SCHEME = "weaver://"
VAULTS_PREFIX = SCHEME + "vaults/"
VAULT_NOTE_TEMPLATE = VAULTS_PREFIX + "{vault}/note/{+path}"


def in_vault(vault: str | None, uri: str) -> str:
    """`uri` as a resource of the named vault (None: the default vault's, as it is)."""
    return uri if vault is None else VAULTS_PREFIX + vault + "/" + uri.removeprefix(SCHEME)


def split_vault(uri: str) -> tuple[str | None, str]:
    """The vault a URI names (None: none, the default's) and the URI within that vault."""
    if not uri.startswith(VAULTS_PREFIX):
        return None, uri
    vault, _, rest = uri.removeprefix(VAULTS_PREFIX).partition("/")
    return unquote(vault), SCHEME + rest


def note_uri(path: str) -> str:
    return NOTE_PREFIX + quote(path, safe="/")


def note_path(uri: str) -> str | None:
    return unquote(uri.removeprefix(NOTE_PREFIX)) if uri.startswith(NOTE_PREFIX) else None


def _cursor(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).decode()


def _after(cursor: str | None) -> str | None:
    if not cursor:
        return None
    try:
        return base64.b64decode(cursor.encode(), altchars=b"-_", validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise MCPError(code=INVALID_PARAMS, message=f"Invalid cursor: {cursor!r}") from None


VAULT_RESOURCES = [
    Resource(
        uri=STATS_URI,
        name="vault-stats",
        title="Vault statistics",
        description="What get_stats answers: notes, tags, links, errors",
        mime_type="application/json",
    ),
    Resource(
        uri=TAGS_URI,
        name="vault-tags",
        title="Tags",
        description=f"The {TAGS_LISTED:,} most used tags with their note counts",
        mime_type="application/json",
    ),
    task_resources.TODAY_RESOURCE,
]


def client_connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The client's `Connection`, which lives as long as its session and sends on its own
    stream. Not `ctx.session`: that is a proxy built for each request, so keeping those kept
    one per request (and a client listing resources twice heard of each change twice). The
    SDK (2.3) hands low-level handlers no public way to it; its `Context` has `.connection`."""
    connection: Connection = ctx.session._connection
    return connection


@dataclass
class Subscriptions:
    """Which clients want to hear of which URIs, and of list changes; owned by the loop.

    Their connections are held weakly: a session the SDK ended (closed by its client, or idle
    past `http_session_idle_s`) is gone from here with it, not kept with its streams."""

    by_uri: dict[str, weakref.WeakSet[Connection]] = field(default_factory=dict)
    listening: weakref.WeakSet[Connection] = field(default_factory=weakref.WeakSet)
    loop: asyncio.AbstractEventLoop | None = None
    list_changed_due: bool = False
    computed_check_due: bool = False
    # The fingerprint subscribers last read of each computed resource (today's tasks, a
    # base's view): what is read after a batch is compared with it.
    seen: dict[str, str] = field(default_factory=dict)
    new_day: asyncio.TimerHandle | None = None  # when they are read again at midnight
    day_check: asyncio.Future[None] | None = None  # that reading, held until it is done
    state: ServerState | None = None
    vault: str | None = None  # the vault whose URIs these are (None: the default's)
    others: list[Callable[[Sequence[VaultEvent]], Awaitable[None]]] = field(default_factory=list)

    def also_tell(self, listener: Callable[[Sequence[VaultEvent]], Awaitable[None]]) -> None:
        """Run `listener` on the loop with each batch of events too (log notifications)."""
        self.others.append(listener)

    def watch(self, state: ServerState) -> None:
        """Hear the indexer's events from now on, on the loop serving the clients (a server
        has one; a new one, as in tests, takes over)."""
        if self.loop is None:
            state.app.bus.subscribe(self.on_events)
        self.loop = asyncio.get_running_loop()
        self.state = state

    def on_events(self, events: Sequence[VaultEvent]) -> None:
        """On the indexer's thread: hand the batch to the loop, never blocking the indexer."""
        if self.loop is not None and not self.loop.is_closed():
            asyncio.run_coroutine_threadsafe(self.notify(events), self.loop)

    async def notify(self, events: Sequence[VaultEvent]) -> None:
        for listener in self.others:
            await listener(events)
        changed: set[str] = set()
        listed = False
        for event in events:
            match event:
                case NoteModified(path=path) | NoteAdded(path=path):
                    changed.add(path)
                    listed = listed or isinstance(event, NoteAdded)
                case NoteDeleted(path=path):
                    changed.add(path)
                    listed = True
                case NoteMoved(old_path=old, path=path):
                    changed.update((old, path))
                    listed = True
        for path in sorted(changed):
            uri = in_vault(self.vault, note_uri(path))
            for connection in list(self.by_uri.get(uri, ())):
                await connection.send_resource_updated(uri)  # never raises: best effort
        if listed and not self.list_changed_due:
            self.list_changed_due = True
            asyncio.get_running_loop().call_later(
                LIST_CHANGED_DEBOUNCE, lambda: asyncio.ensure_future(self._list_changed())
            )
        if changed and self.computed_subscribed() and not self.computed_check_due:
            self.computed_check_due = True
            asyncio.get_running_loop().call_later(
                LIST_CHANGED_DEBOUNCE, lambda: asyncio.ensure_future(self._computed_changed())
            )

    def computed_subscribed(self) -> list[str]:
        """The computed resources someone is subscribed to."""
        return [
            uri for uri, held in self.by_uri.items() if is_computed(split_vault(uri)[1]) and held
        ]

    async def remember(self, uri: str) -> None:
        """Read a computed resource as a new subscriber sees it, so that the next batch is
        compared with that."""
        if self.state is not None and uri not in self.seen:
            state = self.state
            inner = split_vault(uri)[1]
            self.seen[uri] = await anyio.to_thread.run_sync(fingerprint, state, inner)

    def check_at_midnight(self) -> None:
        """Today's tasks change with the date, when no note does (the due today become
        overdue), and so does a base reading today(): while anyone is subscribed, read them
        again once the day turns. One timer a day, not a poll."""
        if self.new_day is None:
            delay = task_resources.seconds_until_tomorrow()
            self.new_day = asyncio.get_running_loop().call_later(delay, self._on_new_day)

    def _on_new_day(self) -> None:
        self.new_day = None
        if self.computed_subscribed():
            self.day_check = asyncio.ensure_future(self._computed_changed())
            self.check_at_midnight()

    async def _computed_changed(self) -> None:
        self.computed_check_due = False
        if self.state is None:
            return
        state = self.state
        for uri in self.computed_subscribed():
            seen = await anyio.to_thread.run_sync(fingerprint, state, split_vault(uri)[1])
            if seen == self.seen.get(uri):
                continue
            self.seen[uri] = seen
            for connection in list(self.by_uri.get(uri, ())):
                await connection.send_resource_updated(uri)

    async def _list_changed(self) -> None:
        self.list_changed_due = False
        for connection in list(self.listening):
            await connection.send_resource_list_changed()


def install_resources(
    server: MCPServer[ServerState],
    state: ServerState,
    sessions: bool = True,
    helps: ToolHelp | None = None,
    routing: VaultRouting | None = None,
) -> Subscriptions:
    """Serve resources/list, templates/list, read, subscribe and unsubscribe on `server`, and
    the tools' `helps` (none without); with `routing`, every vault's resources.

    Without `sessions` (stateless HTTP, several processes: `host.http_readers`), a 2025-11-25
    client has no session to be told anything later: subscribe is not offered, nor are list
    changes advertised, rather than accepted and never delivered."""
    subscriptions = Subscriptions()
    app = state.app
    in_vaults = VaultResources(state, subscriptions, routing)
    lowlevel = server._lowlevel_server  # the SDK's hook lives on the low-level server

    async def list_resources(ctx: Any, params: PaginatedRequestParams) -> ListResourcesResult:
        await state.wait_ready()
        if sessions:
            subscriptions.listening.add(client_connection(ctx))
            subscriptions.watch(state)
        after = _after(params.cursor)
        grant = current_grant(app.settings)
        if scope_of("read") not in grant.scopes:
            return ListResourcesResult(resources=[])  # not allowed to read: nothing to list

        def page() -> list[browse.NoteListing]:
            with read.read_snapshot(app.db) as conn:
                return browse.notes_after(conn, after, PAGE_SIZE)

        notes = await anyio.to_thread.run_sync(page)
        resources = [*VAULT_RESOURCES] if after is None and grant.read is None else []
        if resources and routing is not None:  # every other vault's, named by its URI
            resources += in_vaults.others_resources()
        resources += [
            Resource(
                uri=note_uri(n.path), name=n.path, title=n.title, mime_type=MARKDOWN, size=n.size
            )
            for n in notes
            if grant.may_read(n.path)  # a page may come out short: its cursor goes on
        ]
        more = len(notes) == PAGE_SIZE
        return ListResourcesResult(
            resources=resources, next_cursor=_cursor(notes[-1].path) if more else None
        )

    async def list_templates(
        ctx: Any, params: PaginatedRequestParams
    ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def list_templates_of_vaults(
        ctx: Any, params: PaginatedRequestParams
    ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=[*TEMPLATES, VAULT_NOTE_TEMPLATE_OF])

    async def read_resource(ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = str(params.uri)
        held, inner = in_vaults.of(uri)
        await held.wait_ready()
        if attachment_resources.attachment_path(inner) is not None:
            contents = await anyio.to_thread.run_sync(lambda: _read_attachment(held, inner))
            return ReadResourceResult(contents=[contents.model_copy(update={"uri": uri})])
        text, mime = await anyio.to_thread.run_sync(lambda: _read(held, inner, helps))
        return ReadResourceResult(
            contents=[TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        uri = str(params.uri)
        held, inner = in_vaults.of(uri)
        refusal = reading_refusal(app.settings, f"the resource {uri}", note_path(inner))
        if refusal is not None and help_name(inner) is None:
            raise MCPError(code=INVALID_PARAMS, message=refusal, data={"uri": uri})
        told = in_vaults.subscriptions_of(uri)
        told.watch(held)
        connection = client_connection(ctx)
        told.listening.add(connection)
        told.by_uri.setdefault(uri, weakref.WeakSet()).add(connection)
        if is_computed(inner):
            await held.wait_ready()
            await told.remember(uri)
            told.check_at_midnight()
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        subscribed = in_vaults.subscriptions_of(str(params.uri)).by_uri.get(str(params.uri))
        if subscribed is not None:
            subscribed.discard(client_connection(ctx))
        return EmptyResult()

    lowlevel.add_request_handler("resources/list", PaginatedRequestParams, list_resources)
    templates = list_templates if routing is None else list_templates_of_vaults
    lowlevel.add_request_handler("resources/templates/list", PaginatedRequestParams, templates)
    lowlevel.add_request_handler("resources/read", ReadResourceRequestParams, read_resource)
    if sessions:
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
        advertise_list_changed(lowlevel)
    return subscriptions


def advertise_list_changed(lowlevel: Server[Any]) -> None:
    """Advertise `resources.listChanged`, which this module sends.

    Every transport builds the initialize answer with `create_initialization_options()` and no
    arguments, i.e. default notification options: every `listChanged` false. The server's own
    method is wrapped so that the default says what Weaver sends (resource list changes; the
    tool and prompt lists never change while it runs). A protocol version of 2026-07-28 or
    later derives these flags from `subscriptions/listen` instead, as the SDK decides."""
    create = lowlevel.create_initialization_options

    def with_weaver_notifications(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return create(
            notification_options or NotificationOptions(resources_changed=True),
            experimental_capabilities,
            extensions,
        )

    lowlevel.create_initialization_options = with_weaver_notifications  # type: ignore[method-assign]


def is_computed(uri: str) -> bool:
    """A resource computed from many notes (its subscribers hear when its reading changes)."""
    return uri == task_resources.TODAY_URI or base_resources.is_base_uri(uri)


def fingerprint(state: ServerState, uri: str) -> str:
    if uri == task_resources.TODAY_URI:
        return task_resources.fingerprint(state)
    return base_resources.fingerprint(state, uri)


def _read(state: ServerState, uri: str, helps: ToolHelp | None) -> tuple[str, str]:
    """A resource's text and MIME type; an invalid-params error naming what is wrong."""
    try:
        name = help_name(uri)
        if name is not None and helps is not None:
            return _read_help(helps, name), MARKDOWN
        refusal = reading_refusal(state.app.settings, f"the resource {uri}", note_path(uri))
        if refusal is not None:
            raise AccessDeniedError(refusal)
        return _read_text(state, uri)
    except (WeaverError, OSError) as exc:
        message = str(exc) if isinstance(exc, WeaverError) else "Cannot read file"
        raise MCPError(code=INVALID_PARAMS, message=message, data={"uri": uri}) from None


def _read_attachment(state: ServerState, uri: str) -> TextResourceContents | BlobResourceContents:
    """An attachment's resource, under the read globs of the caller's access rule."""
    path = attachment_resources.attachment_path(uri)
    try:
        refusal = reading_refusal(state.app.settings, f"the resource {uri}", path)
        if refusal is not None:
            raise AccessDeniedError(refusal)
        return attachment_resources.read_attachment_resource(state, uri)
    except (WeaverError, OSError) as exc:
        message = str(exc) if isinstance(exc, WeaverError) else "Cannot read file"
        raise MCPError(code=INVALID_PARAMS, message=message, data={"uri": uri}) from None


def _read_text(state: ServerState, uri: str) -> tuple[str, str]:
    app = state.app
    if uri == STATS_URI:
        with read.read_snapshot(app.db) as conn:
            stats = state.stats.get(conn)
        body = {
            "totalFiles": stats.total_files,
            "totalAttachments": stats.total_attachments,
            "filesWithErrors": stats.files_with_errors,
            "totalTags": stats.total_tags,
            "totalLinks": stats.total_links,
            "brokenLinks": stats.broken_links,
            "lastUpdated": stats.last_updated,
        }
        return json.dumps(body), "application/json"
    if uri == TAGS_URI:
        with read.read_snapshot(app.db) as conn:
            page = browse.list_tags(conn, None, None, TAGS_LISTED, 0, "count")
        tags = [{"tag": t.tag, "notes": t.notes, "own": t.own} for t in page.items]
        return json.dumps({"tags": tags, "total": page.total}, ensure_ascii=False), (
            "application/json"
        )
    if uri == task_resources.TODAY_URI:
        return task_resources.read_today(state), "application/json"
    if base_resources.is_base_uri(uri):
        return base_resources.read_base(state, uri), "application/json"
    path = note_path(uri)
    if path is None:
        raise UnknownResourceError(f"Unknown resource: {uri!r} (notes are {NOTE_TEMPLATE})")
    clean = app.vault.check_note_path(path)
    return decode(clean, app.vault.read_note(clean)), MARKDOWN


def _read_help(helps: ToolHelp, name: str) -> str:
    text = helps.read(name)
    if text is None:
        close = suggest(name, helps.names)
        hint = f" ({did_you_mean(close)})" if close else ""
        raise UnknownResourceError(f"Unknown tool: {name!r}{hint}")
    return text


TEMPLATES = [
    ResourceTemplate(
        uri_template=NOTE_TEMPLATE,
        name="note",
        title="A note of the vault",
        description="A note's markdown text, by its vault-relative path",
        mime_type=MARKDOWN,
    ),
    ResourceTemplate(
        uri_template=base_resources.BASE_TEMPLATE,
        name="base",
        title="A base's view",
        description="A view of a .base file or a note's ```base block (?view=NAME, ?block=N)",
        mime_type="application/json",
    ),
    attachment_resources.TEMPLATE,
    ResourceTemplate(
        uri_template=HELP_TEMPLATE,
        name="tool-help",
        title="A tool's help",
        description="What one tool does, its arguments, its result, examples",
        mime_type=MARKDOWN,
    ),
]


VAULT_NOTE_TEMPLATE_OF = ResourceTemplate(
    uri_template=VAULT_NOTE_TEMPLATE,
    name="vault-note",
    title="A note of a named vault",
    description="A note of one of the server's vaults (every resource of a vault is its "
    "weaver:// URI under weaver://vaults/{vault}/)",
    mime_type=MARKDOWN,
)


class UnknownResourceError(WeaverError):
    """A URI that names no resource of this server."""


@dataclass
class VaultResources:
    """Which vault a resource URI is of, and the subscriptions of each vault's URIs (one
    server's; the default vault's are `default`)."""

    state: ServerState
    default: Subscriptions
    routing: VaultRouting | None
    by_vault: dict[str, Subscriptions] = field(default_factory=dict)

    def of(self, uri: str) -> tuple[ServerState, str]:
        """The state of the vault `uri` names, and the URI within that vault; an unknown vault
        is an invalid-params error naming the vaults."""
        vault, inner = split_vault(uri)
        if vault is None or self.routing is None:
            return self.state, uri
        if vault not in self.routing.states:
            message = self.routing.unknown_vault("", vault).replace("vault:", "vault in the URI:")
            raise MCPError(code=INVALID_PARAMS, message=message, data={"uri": uri})
        return self.routing.states[vault], inner

    def others_resources(self) -> list[Resource]:
        """The vault-level resources (stats, tags, today's tasks) of every other vault."""
        if self.routing is None:
            return []
        return [
            each.model_copy(
                update={"uri": in_vault(name, str(each.uri)), "name": f"{name}-{each.name}"}
            )
            for name in self.routing.names
            if name != self.routing.default
            for each in VAULT_RESOURCES
        ]

    def subscriptions_of(self, uri: str) -> Subscriptions:
        vault, _ = split_vault(uri)
        if vault is None or self.routing is None:
            return self.default
        self.of(uri)  # refuses an unknown vault
        if vault not in self.by_vault:
            self.by_vault[vault] = Subscriptions(vault=vault)
        return self.by_vault[vault]
