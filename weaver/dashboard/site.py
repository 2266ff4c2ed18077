"""The dashboard's routes, mounted at `/` by `weaver daemon` beside `/mcp` and `/health`.

Pages are rendered on the server (Jinja2); a small script (`static/dashboard.js`) follows
`/events` and reloads the parts of a page marked `data-live`, and draws the graph with the
vendored Cytoscape.js. Reads go through `data` (the core functions of the MCP tools and CLI);
the three actions (trigger, re-run, cancel) are POSTs with a CSRF token, refused under
`read_only` as `trigger_workflow` is.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, get_args
from urllib.parse import parse_qs, quote, urlencode

import anyio.to_thread
from jinja2 import Environment
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from weaver.dashboard import base_pages, data, live, task_list
from weaver.dashboard.render import build_templates
from weaver.dashboard.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    DashboardGuard,
    csrf_valid,
    new_csrf_token,
    safe_next,
    session_value,
    token_matches,
)
from weaver.edits.attribution import Actor, acting_as
from weaver.edits.audit import AuditPage, AuditQueryError, read_audit
from weaver.edits.steps import NoteChangedError, NoteEditError
from weaver.engine.workflow_errors import (
    EngineUnavailableError,
    ExecutionNotFoundError,
    WorkflowNotFoundError,
    WorkflowRequestError,
)
from weaver.errors import (
    InvalidPathError,
    NoteNotFoundError,
    WeaverError,
    did_you_mean,
    suggest,
)
from weaver.json_nesting import load_json
from weaver.runtime.state import ServerState
from weaver.search import SearchMode, SearchRequest

MAX_FORM_BYTES = 1_000_000
AUDIT_PER_PAGE = 50
AUDIT_FILTERS = ("client", "note", "since")
DASHBOARD = Actor("dashboard", "dashboard", "dashboard", "restore_edit")
Handler = Callable[[Request], Awaitable[Response]]
# Several vaults: the query parameter choosing the vault a page shows, and the cookie keeping
# that choice for the pages after it (their links need not carry it).
VAULT_PARAM = "vault"
VAULT_COOKIE = "weaver_vault"
# The pages a vault switch stays on (any other, a note or a run of one vault, goes to `/`).
SWITCHED_PAGES = frozenset(
    {"/", "/runs", "/workflows", "/vault", "/search", "/tasks", "/bases", "/graph", "/audit"}
)


# What the search page's mode selector may send; anything else means the tool's default.
SEARCH_MODES: dict[str, SearchMode] = {m: m for m in get_args(SearchMode)}


class FormError(Exception):
    """A POST that cannot be taken: its status and the reason shown."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Dashboard:
    """One dashboard over one server state; `asgi()` is what the daemon mounts."""

    def __init__(
        self,
        state: ServerState,
        bind_host: str,
        vaults: Mapping[str, ServerState] | None = None,
    ) -> None:
        self.settings = state.app.settings
        self.default_vault = self.settings.vault_name
        # Every vault by name (one: the state alone); a page shows the chosen one (`vault_of`).
        self.vaults: dict[str, ServerState] = dict(vaults or {self.default_vault: state})
        self.bind_host = bind_host
        self.templates: Environment = build_templates()
        self.graphs = {name: data.GraphCache() for name in self.vaults}
        self.health_memos = {name: data.HealthMemo() for name in self.vaults}
        self.closing = threading.Event()

    # -- the vault shown ------------------------------------------------------------------

    def vault_of(self, request: Request) -> str:
        """The vault a page shows: `?vault=NAME` (remembered in a cookie, `render`), else the
        one last chosen, else the default. An unknown name is a 404 naming the vaults."""
        asked = request.query_params.get(VAULT_PARAM)
        if asked is None:
            kept = request.cookies.get(VAULT_COOKIE)
            return kept if kept in self.vaults else self.default_vault
        if asked not in self.vaults:
            close = suggest(asked, list(self.vaults))
            hint = f" ({did_you_mean(close)})" if close else ""
            raise FormError(
                404, f"Unknown vault: {asked!r}{hint}. The vaults: {', '.join(self.vaults)}"
            )
        return asked

    def state_of(self, request: Request) -> ServerState:
        return self.vaults[self.vault_of(request)]

    def graphs_of(self, request: Request) -> data.GraphCache:
        return self.graphs[self.vault_of(request)]

    def memo_of(self, request: Request) -> data.HealthMemo:
        return self.health_memos[self.vault_of(request)]

    def close(self) -> None:
        """End the open event streams (the server is stopping)."""
        self.closing.set()

    def asgi(self) -> ASGIApp:
        routes = [
            Route("/", self._page(self.overview)),
            Route("/runs", self._page(self.runs)),
            Route("/runs/{execution_id}", self._page(self.run)),
            Route("/runs/{execution_id}/rerun", self._page(self.rerun), methods=["POST"]),
            Route("/runs/{execution_id}/cancel", self._page(self.cancel), methods=["POST"]),
            Route("/workflows", self._page(self.workflows)),
            Route("/workflows/{workflow_id}", self._page(self.workflow)),
            Route("/workflows/{workflow_id}/trigger", self._page(self.trigger), methods=["POST"]),
            Route("/vault", self._page(self.vault_health)),
            Route("/search", self._page(self.search)),
            Route("/tasks", self._page(self.tasks)),
            Route("/bases", self._page(self.bases)),
            Route("/bases/view", self._page(self.base_view)),
            Route("/notes/{path:path}", self._page(self.note)),
            Route("/edits/{edit_id:int}/restore", self._page(self.restore_edit), methods=["POST"]),
            Route("/audit", self._page(self.audit)),
            Route("/graph", self._page(self.graph)),
            Route("/graph/data", self._page(self.graph_data)),
            Route("/events", self.events),
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Mount("/static", StaticFiles(packages=[("weaver.dashboard", "static")])),
        ]
        site = Starlette(routes=routes)
        # Behind a TLS proxy (`public_url`) the browser's Origin is the proxy's, not the Host.
        return DashboardGuard(
            site, self.bind_host, self.settings.http_token, public_origin=self.settings.public_url
        )

    # -- rendering ------------------------------------------------------------------------

    def render(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> Response:
        csrf = request.cookies.get(CSRF_COOKIE)
        fresh = csrf is None
        try:
            vault = self.vault_of(request)
        except FormError:  # the error page naming the vaults: shown over the default vault
            vault = self.default_vault
        token = csrf or new_csrf_token()
        html = self.templates.get_template(template).render(
            request=request,
            csrf=token,
            csrf_field=CSRF_FIELD,
            read_only=self.settings.read_only,
            login=bool(self.settings.http_token),
            path=request.url.path,
            vault=vault,
            vaults=list(self.vaults) if len(self.vaults) > 1 else [],
            switch_to=request.url.path if request.url.path in SWITCHED_PAGES else "/",
            **context,
        )
        response = HTMLResponse(html, status_code=status)
        if fresh:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/")
        if VAULT_PARAM in request.query_params and vault == request.query_params[VAULT_PARAM]:
            response.set_cookie(VAULT_COOKIE, vault, httponly=True, samesite="strict", path="/")
        return response

    def _page(self, handler: Handler) -> Handler:
        """Weaver's errors become a page saying what was wrong, with a fitting status."""

        async def page(request: Request) -> Response:
            try:
                return await handler(request)
            except FormError as exc:
                return self.render(request, "error.html", exc.status, message=str(exc))
            except WeaverError as exc:
                return self.render(request, "error.html", _status_of(exc), message=str(exc))

        return page

    async def read_form(self, request: Request) -> dict[str, str]:
        """A POST's urlencoded fields, once its CSRF token is checked."""
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise FormError(413, "The form is too large")
        fields = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if not csrf_valid(request.cookies.get(CSRF_COOKIE), fields.get(CSRF_FIELD)):
            raise FormError(403, "The form's CSRF token is missing or wrong: reload the page")
        return fields

    def refuse_if_read_only(self) -> None:
        if self.settings.read_only:
            raise FormError(
                403, "read_only is set: workflows cannot be triggered, re-run or cancelled here"
            )

    # -- pages ----------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        overview = await anyio.to_thread.run_sync(data.load_overview, self.state_of(request))
        return self.render(request, "overview.html", o=overview, statuses=data.STATUSES)

    async def runs(self, request: Request) -> Response:
        filters = data.RunFilters.parse(dict(request.query_params))
        found = await anyio.to_thread.run_sync(data.load_runs, self.state_of(request), filters)
        return self.render(
            request, "runs.html", r=found, statuses=data.STATUSES, periods=list(data.PERIODS)
        )

    async def run(self, request: Request) -> Response:
        execution_id = request.path_params["execution_id"]
        page = await anyio.to_thread.run_sync(data.load_run, self.state_of(request), execution_id)
        return self.render(request, "run.html", run=page.status, page=page)

    async def rerun(self, request: Request) -> Response:
        await self.read_form(request)
        self.refuse_if_read_only()
        execution_id = request.path_params["execution_id"]

        def work() -> str:
            return (
                data.engine_of(self.state_of(request))
                .rerun(execution_id, via="dashboard")
                .execution_id
            )

        new_id = await anyio.to_thread.run_sync(work)
        return RedirectResponse(f"/runs/{new_id}", status_code=303)

    async def cancel(self, request: Request) -> Response:
        await self.read_form(request)
        self.refuse_if_read_only()
        execution_id = request.path_params["execution_id"]
        await anyio.to_thread.run_sync(
            lambda: data.engine_of(self.state_of(request)).cancel(execution_id)
        )
        return RedirectResponse(f"/runs/{execution_id}", status_code=303)

    async def restore_edit(self, request: Request) -> Response:
        """Undo one of a note's edits by Weaver (the note page's button), as restore_edit."""
        fields = await self.read_form(request)
        if self.settings.read_only:
            raise FormError(403, "read_only is set: notes cannot be changed here")
        edit_id = request.path_params["edit_id"]
        with acting_as(DASHBOARD):  # the audit names the dashboard (its owner) for the undo
            path = await anyio.to_thread.run_sync(
                data.restore_note_edit, self.state_of(request), fields.get("path", ""), edit_id
            )
        return RedirectResponse(f"/notes/{quote(path)}", status_code=303)

    async def workflows(self, request: Request) -> Response:
        listed = await anyio.to_thread.run_sync(data.load_workflows, self.state_of(request))
        return self.render(request, "workflows.html", w=listed)

    async def workflow(self, request: Request) -> Response:
        workflow_id = request.path_params["workflow_id"]
        page = await anyio.to_thread.run_sync(
            data.load_workflow, self.state_of(request), workflow_id
        )
        return self.render(request, "workflow.html", w=page, input_text="{}", error=None)

    async def trigger(self, request: Request) -> Response:
        form = await self.read_form(request)
        self.refuse_if_read_only()
        workflow_id = request.path_params["workflow_id"]
        text = form.get("input", "").strip() or "{}"
        try:
            value = load_json(text)
        except ValueError as exc:  # not JSON, or nested too deep to parse
            return await self._trigger_refused(
                request, workflow_id, text, f"Input is not JSON: {exc}"
            )

        def work() -> str:
            engine = data.engine_of(self.state_of(request))
            return engine.trigger(workflow_id, value, async_=True, via="dashboard").execution_id

        try:
            new_id = await anyio.to_thread.run_sync(work)
        except WorkflowRequestError as exc:
            return await self._trigger_refused(request, workflow_id, text, str(exc))
        return RedirectResponse(f"/runs/{new_id}", status_code=303)

    async def _trigger_refused(
        self, request: Request, workflow_id: str, text: str, message: str
    ) -> Response:
        page = await anyio.to_thread.run_sync(
            data.load_workflow, self.state_of(request), workflow_id
        )
        return self.render(request, "workflow.html", 400, w=page, input_text=text, error=message)

    async def vault_health(self, request: Request) -> Response:
        offsets = {name: _int(request.query_params.get(name), 0) for name in _SECTIONS}
        report = await anyio.to_thread.run_sync(
            data.load_vault_health,
            self.state_of(request),
            self.graphs_of(request),
            offsets,
            self.memo_of(request),
        )

        def page_query(section: str, offset: int) -> str:
            return urlencode({k: v for k, v in (offsets | {section: offset}).items() if v})

        return self.render(request, "vault.html", v=report, page_query=page_query)

    async def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        offset = _int(request.query_params.get("offset"), 0)
        mode = SEARCH_MODES.get(request.query_params.get("mode", ""))
        asked = SearchRequest(query, mode, limit=data.SEARCH_PER_PAGE, offset=offset)
        view = await anyio.to_thread.run_sync(data.search_notes, self.state_of(request), asked)
        return self.render(
            request, "search.html", s=view.results, error=view.error, per_page=view.results.limit
        )

    async def audit(self, request: Request) -> Response:
        """Which client made each write, newest first, filtered as `weaver audit` filters."""
        filters = {name: request.query_params.get(name, "").strip() for name in AUDIT_FILTERS}
        offset = _int(request.query_params.get("offset"), 0)

        def load() -> AuditPage:
            return read_audit(
                self.state_of(request).app.db,
                **filters,
                limit=AUDIT_PER_PAGE,
                offset=max(0, offset),
            )

        error = None
        try:
            found = await anyio.to_thread.run_sync(load)
        except AuditQueryError as exc:  # a filter that cannot be read: said beside the form
            found, error = AuditPage((), 0, 0), str(exc)

        def page_query(at: int) -> str:
            return urlencode({k: v for k, v in (filters | {"offset": str(at)}).items() if v})

        return self.render(
            request,
            "audit.html",
            a=found,
            filters=filters,
            error=error,
            per_page=AUDIT_PER_PAGE,
            page_query=page_query,
        )

    async def tasks(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        offset = _int(request.query_params.get("offset"), 0)
        found = await anyio.to_thread.run_sync(
            task_list.load_tasks, self.state_of(request), query, offset
        )
        status = 400 if found.error else 200
        return self.render(
            request, "tasks.html", status, t=found, per_page=task_list.TASKS_PER_PAGE
        )

    async def bases(self, request: Request) -> Response:
        offset = _int(request.query_params.get("offset"), 0)
        found = await anyio.to_thread.run_sync(
            base_pages.load_bases, self.state_of(request), offset
        )
        return self.render(request, "bases.html", b=found, per_page=base_pages.BASES_PER_PAGE)

    async def base_view(self, request: Request) -> Response:
        params = request.query_params
        path, view = params.get("path", ""), params.get("view") or None
        block = _int(params.get("block"), -1)
        offset = _int(params.get("offset"), 0)

        def load() -> base_pages.BaseTable:
            return base_pages.load_table(
                self.state_of(request), path, view, block if block >= 0 else None, offset
            )

        table = await anyio.to_thread.run_sync(load)
        status = 400 if table.error else 200
        return self.render(
            request, "base_view.html", status, t=table, per_page=base_pages.ROWS_PER_PAGE
        )

    async def note(self, request: Request) -> Response:
        path = request.path_params["path"]
        page = await anyio.to_thread.run_sync(
            data.load_note, self.state_of(request), self.graphs_of(request), path
        )
        return self.render(request, "note.html", n=page, note=page.detail.summary)

    async def graph(self, request: Request) -> Response:
        params = request.query_params
        return self.render(
            request,
            "graph.html",
            note=params.get("note", ""),
            folder=params.get("folder", ""),
            depth=min(max(_int(params.get("depth"), 1), 1), 3),
        )

    async def graph_data(self, request: Request) -> Response:
        params = request.query_params
        depth = min(max(_int(params.get("depth"), 1), 1), 3)
        try:
            elements = await anyio.to_thread.run_sync(
                data.load_graph,
                self.state_of(request),
                self.graphs_of(request),
                params.get("note") or None,
                params.get("folder") or None,
                depth,
            )
        except WeaverError as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status_of(exc))
        return JSONResponse(elements)

    async def events(self, request: Request) -> Response:
        stream = live.stream_events(
            self.state_of(request).app.db, self.closing, request.is_disconnected
        )
        return StreamingResponse(
            stream, media_type="text/event-stream", headers={"X-Accel-Buffering": "no"}
        )

    # -- login ----------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        token = self.settings.http_token
        target = safe_next(request.query_params.get("next"))
        if request.method == "GET" or not token:
            if not token:
                return RedirectResponse("/", status_code=303)
            return self.render(request, "login.html", next=target, error=None)
        try:
            form = await self.read_form(request)
        except FormError as exc:
            return self.render(request, "login.html", exc.status, next=target, error=str(exc))
        if not token_matches(form.get("token", ""), token):
            return self.render(request, "login.html", 401, next=target, error="Wrong token")
        response = RedirectResponse(safe_next(form.get("next")), status_code=303)
        response.set_cookie(
            SESSION_COOKIE, session_value(token), httponly=True, samesite="strict", path="/"
        )
        return response

    async def logout(self, request: Request) -> Response:
        try:
            await self.read_form(request)
        except FormError as exc:
            return self.render(request, "error.html", exc.status, message=str(exc))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response


_SECTIONS = ("broken", "orphans", "failures", "shared")


def _int(value: str | None, default: int) -> int:
    try:
        return max(int(value), 0) if value is not None else default
    except ValueError:
        return default


def _status_of(error: WeaverError) -> int:
    if isinstance(error, NoteNotFoundError | ExecutionNotFoundError | WorkflowNotFoundError):
        return 404
    if isinstance(error, EngineUnavailableError):
        return 503
    if isinstance(error, WorkflowRequestError | InvalidPathError | NoteEditError):
        return 400
    if isinstance(error, NoteChangedError):
        return 409
    return 500
