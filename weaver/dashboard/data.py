"""What each page shows, gathered from the core functions the MCP tools and the CLI call.

Blocking (SQL, files): the routes call these in a worker thread. Nothing here writes SQL of
its own: runs come from `WorkflowEngine` (`get_history`, `get_status`, `list_workflows`),
notes from `cache.read`, `cache.link_ends` (where a note's links lead), `weaver.search` and
`views.link_graph`, vault problems from `cache.vault_health`, health from `compute_health`
(the same report as `GET /health`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from weaver.cache import executions, read, vault_health
from weaver.cache import graph as cache_graph
from weaver.cache.link_ends import link_ends_of
from weaver.cache.read import FileDetail, VaultStats
from weaver.dashboard.note_text import NoteLinks
from weaver.edits import history
from weaver.engine import WorkflowEngine
from weaver.engine.payloads import (
    ExecutionSummary,
    ListWorkflowsData,
    WorkflowHistoryData,
    WorkflowInfo,
    WorkflowStatusData,
)
from weaver.engine.workflow_errors import EngineUnavailableError
from weaver.errors import NoteNotFoundError, SemanticUnavailableError
from weaver.log import EXECUTION_LOGS
from weaver.markdown.frontmatter import read_frontmatter
from weaver.paging import Page, page_of
from weaver.runtime.cache_sync import sync_cache
from weaver.runtime.health_report import Health, compute_health
from weaver.runtime.state import ServerState
from weaver.search import SearchRequest, SearchResults, find_notes
from weaver.views import health
from weaver.views import link_graph as g

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
CHART_DAYS = 14
RUNS_PER_PAGE = 50
PROBLEMS_PER_PAGE = 50
SEARCH_PER_PAGE = 20
NEIGHBOURS_SHOWN = 50
EDITS_SHOWN = 10  # the note page's recent edits by Weaver; `weaver edits` lists the rest
GRAPH_NODES = 300
NOTE_CHARS = 200_000  # the note page shows this much text; get_file_content reads on
PERIODS: dict[str, int | None] = {
    "1h": HOUR_MS,
    "24h": DAY_MS,
    "7d": 7 * DAY_MS,
    "30d": 30 * DAY_MS,
}
STATUSES = executions.EXECUTION_STATUSES


def now_ms() -> int:
    return int(time.time() * 1000)


def engine_of(state: ServerState) -> WorkflowEngine:
    engine = state.engine
    if not isinstance(engine, WorkflowEngine) or not engine.running:
        raise EngineUnavailableError()
    return engine


# ---------------------------------------------------------------- overview


@dataclass(frozen=True, slots=True)
class DayBar:
    label: str  # e.g. "11-26"
    counts: dict[str, int]  # status (or "notes") -> count

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class NextRun:
    workflow_id: str
    workflow_name: str
    when: datetime


@dataclass(frozen=True, slots=True)
class Overview:
    health: Health
    components: dict[str, str]  # component -> "ok" | "off" | "down" | a short problem
    stats: VaultStats
    runs_24h: dict[str, int]
    failed: list[ExecutionSummary]
    running: list[ExecutionSummary]
    next_runs: list[NextRun]
    run_days: list[DayBar]
    note_days: list[DayBar]


def load_overview(state: ServerState) -> Overview:
    now = now_ms()
    health = compute_health(state)
    engine = state.engine if isinstance(state.engine, WorkflowEngine) else None
    since = (now // DAY_MS - CHART_DAYS + 1) * DAY_MS
    with read.read_snapshot(state.app.db) as conn:
        stats = read.get_stats(conn)
        runs_24h = executions.count_by_status(conn, now - DAY_MS)
        by_day = executions.count_by_day(conn, since, DAY_MS)
        notes_by_day = vault_health.count_modified_by_day(conn, since, DAY_MS)
    failed: list[ExecutionSummary] = []
    running: list[ExecutionSummary] = []
    next_runs: list[NextRun] = []
    if engine is not None and engine.running:
        failed = engine.get_history(None, 10, 0, executions.FAILED).executions
        running = engine.get_history(None, 10, 0, executions.RUNNING).executions
        next_runs = list_next_runs(engine)[:10]
    days = [now // DAY_MS - offset for offset in range(CHART_DAYS - 1, -1, -1)]
    run_days = [
        DayBar(_day_label(day), {s: by_day.get((day, s), 0) for s in STATUSES}) for day in days
    ]
    note_days = [DayBar(_day_label(day), {"notes": notes_by_day.get(day, 0)}) for day in days]
    return Overview(
        health=health,
        components=_components(state, health, engine),
        stats=stats,
        runs_24h=runs_24h,
        failed=failed,
        running=running,
        next_runs=next_runs,
        run_days=run_days,
        note_days=note_days,
    )


def _day_label(day: int) -> str:
    return datetime.fromtimestamp(day * DAY_MS / 1000, UTC).strftime("%m-%d")


def _components(
    state: ServerState, health: Health, engine: WorkflowEngine | None
) -> dict[str, str]:
    parts = health.components
    watcher = state.watcher
    if state.writer and watcher is not None:
        watching = "ok" if watcher.running else f"down: {watcher.last_error or 'stopped'}"
    else:
        watching = {"reader": "another process watches", "unwatched": "off"}.get(
            state.role, "starting"
        )
    scheduler = engine.scheduler if engine is not None else None
    errors = engine.plugin_errors if engine is not None else []
    return {
        "cache": "ok" if parts.shadow_cache else "down",
        "vault folder": "ok" if parts.file_system else "down",
        "watcher": watching,
        "engine": "ok" if parts.workflow_engine else "down",
        "scheduler": "off" if scheduler is None else ("ok" if scheduler.running else "down"),
        "plugins": "ok" if not errors else f"{len(errors)} failed to load",
    }


def list_next_runs(engine: WorkflowEngine) -> list[NextRun]:
    """The next fire time of each scheduled workflow: the scheduler's own when it runs here,
    else computed from the same cron triggers it would use. Soonest first."""
    names = {workflow.id: workflow.name for workflow in engine.registry}
    if engine.scheduler is not None:
        times = engine.scheduler.next_fire_times()
    else:
        times = {}
        now = datetime.now(UTC)
        for workflow in engine.registry:
            if not workflow.enabled:
                continue
            fires = [s.build_trigger().get_next_fire_time(None, now) for s in workflow.schedules]
            fires = [when for when in fires if when is not None]
            if fires:
                times[workflow.id] = min(fires)
    found = [NextRun(wid, names.get(wid, wid), when) for wid, when in times.items()]
    return sorted(found, key=lambda run: run.when)


# ---------------------------------------------------------------- runs


@dataclass(frozen=True, slots=True)
class RunFilters:
    """The runs page's filters; `start` and `end` are UTC days (YYYY-MM-DD), both included."""

    workflow: str | None = None
    status: str | None = None
    period: str | None = None  # a key of PERIODS
    start: str | None = None
    end: str | None = None
    page: int = 1

    @classmethod
    def parse(cls, params: dict[str, str]) -> RunFilters:
        status = params.get("status") or None
        period = params.get("period") or None
        try:
            page = max(int(params.get("page", "1")), 1)
        except ValueError:
            page = 1
        return cls(
            workflow=params.get("workflow") or None,
            status=status if status in STATUSES else None,
            period=period if period in PERIODS else None,
            start=params.get("start") if _day_ms(params.get("start")) is not None else None,
            end=params.get("end") if _day_ms(params.get("end")) is not None else None,
            page=page,
        )

    def query(self, **changes: Any) -> str:
        values = {
            "workflow": self.workflow,
            "status": self.status,
            "period": self.period,
            "start": self.start,
            "end": self.end,
            "page": self.page,
        } | changes
        return urlencode({k: v for k, v in values.items() if v not in (None, "", 1)})

    def window(self, now: int) -> tuple[int | None, int | None]:
        """[since, until) in epoch ms: the later of the period's start and `start`, and the day
        after `end`."""
        span = PERIODS.get(self.period or "")
        starts = [now - span if span else None, _day_ms(self.start)]
        since = max((s for s in starts if s is not None), default=None)
        last = _day_ms(self.end)
        return since, None if last is None else last + DAY_MS


def _day_ms(day: str | None) -> int | None:
    """Midnight UTC of a YYYY-MM-DD day, in epoch ms; None for anything else."""
    if not day:
        return None
    try:
        parsed = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(parsed.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class RunList:
    filters: RunFilters
    history: WorkflowHistoryData
    workflows: ListWorkflowsData
    pages: int


def load_runs(state: ServerState, filters: RunFilters) -> RunList:
    engine = engine_of(state)
    since, until = filters.window(now_ms())
    offset = (filters.page - 1) * RUNS_PER_PAGE
    history = engine.get_history(
        filters.workflow, RUNS_PER_PAGE, offset, filters.status, since=since, until=until
    )
    pages = max((history.total + RUNS_PER_PAGE - 1) // RUNS_PER_PAGE, 1)
    return RunList(filters, history, engine.list_workflows(), pages)


@dataclass(frozen=True, slots=True)
class RunPage:
    status: WorkflowStatusData
    logs: list[dict[str, str]]
    cancellable: bool


def load_run(state: ServerState, execution_id: str) -> RunPage:
    engine = engine_of(state)
    status = engine.get_status(execution_id)
    return RunPage(
        status=status,
        logs=EXECUTION_LOGS.lines_of(execution_id),
        cancellable=status.status in (executions.PENDING, executions.RUNNING),
    )


# ---------------------------------------------------------------- workflows


@dataclass(frozen=True, slots=True)
class WorkflowList:
    workflows: ListWorkflowsData
    next_runs: dict[str, datetime]


def load_workflows(state: ServerState) -> WorkflowList:
    engine = engine_of(state)
    listed = engine.list_workflows()
    next_runs = {run.workflow_id: run.when for run in list_next_runs(engine)}
    return WorkflowList(listed, next_runs)


@dataclass(frozen=True, slots=True)
class WorkflowPage:
    info: WorkflowInfo
    next_run: datetime | None
    recent: WorkflowHistoryData


def load_workflow(state: ServerState, workflow_id: str) -> WorkflowPage:
    engine = engine_of(state)
    workflow = engine.registry.require(workflow_id)
    listed = {info.id: info for info in engine.list_workflows().workflows}
    info = listed[workflow.id]
    next_runs = {run.workflow_id: run.when for run in list_next_runs(engine)}
    recent = engine.get_history(workflow.id, 20, 0)
    return WorkflowPage(info, next_runs.get(workflow.id), recent)


# ---------------------------------------------------------------- vault health


@dataclass(frozen=True, slots=True)
class VaultHealth:
    broken: Page[health.BrokenTarget]
    orphans: Page[str]
    failures: Page[vault_health.ParseFailure]
    shared: Page[health.SharedName]


class HealthMemo:
    """Vault problems change only when the cache does: the pages asked for are kept until the
    cache's version moves (a few hundred ms of queries at 10,000 notes, paid once per change)."""

    KEPT = 16

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: int | None = None
        self._pages: dict[tuple[int, ...], VaultHealth] = {}

    def get(self, version: int | None, key: tuple[int, ...]) -> VaultHealth | None:
        with self._lock:
            return self._pages.get(key) if version == self._version else None

    def keep(self, version: int | None, key: tuple[int, ...], value: VaultHealth) -> None:
        with self._lock:
            if version != self._version or len(self._pages) >= self.KEPT:
                self._version, self._pages = version, {}
            self._pages[key] = value


def load_vault_health(
    state: ServerState,
    graphs: GraphCache,
    offsets: dict[str, int],
    memo: HealthMemo | None = None,
) -> VaultHealth:
    size = PROBLEMS_PER_PAGE
    key = tuple(offsets.get(section, 0) for section in ("broken", "orphans", "failures", "shared"))
    with read.read_snapshot(state.app.db) as conn:
        version = read.last_updated(conn)
        kept = memo.get(version, key) if memo is not None else None
        if kept is not None:
            return kept
        graph = graphs.graphs.get(conn)
        report = VaultHealth(
            broken=page_of(health.broken_targets(graph), key[0], size),
            orphans=page_of(health.orphans(graph), key[1], size),
            failures=vault_health.list_parse_failures(conn, size, key[2]),
            shared=page_of(health.shared_names(graph), key[3], size),
        )
    if memo is not None:
        memo.keep(version, key, report)
    return report


# ---------------------------------------------------------------- search and notes


@dataclass(frozen=True, slots=True)
class SearchView:
    results: SearchResults
    error: str | None = None  # why the search could not run (semantic search unavailable)


def search_notes(state: ServerState, request: SearchRequest) -> SearchView:
    """The `search_notes` tool's search, with its ranking, filters and default mode."""
    sources = state.search_sources
    try:
        return SearchView(find_notes(sources, request))
    except SemanticUnavailableError as exc:  # only a mode asked for: the default falls back
        failed = SearchResults(
            request.query, [], 0, request.limit, request.offset, request.mode or "keyword"
        )
        return SearchView(failed, error=str(exc))


@dataclass(frozen=True, slots=True)
class NotePage:
    detail: FileDetail
    body: str  # the text after the frontmatter block, up to NOTE_CHARS
    truncated: bool
    properties: dict[str, Any]  # the frontmatter as Obsidian reads it ({} if none or invalid)
    frontmatter_error: str | None  # why the block is not properties, shown with `frontmatter`
    frontmatter: str  # the block as written, when it is invalid
    links: NoteLinks
    neighbours: list[g.Neighbor]
    neighbour_total: int
    titles: dict[str, str]
    edits: history.NoteEdits


class GraphCache:
    """The link graph kept per cache version, as `get_graph` and `get_neighbors` keep theirs."""

    def __init__(self) -> None:
        self.graphs = cache_graph.graph_cache()


def load_note(state: ServerState, graphs: GraphCache, path: str) -> NotePage:
    vault = state.app.vault
    clean = vault.check_note_path(path)
    with read.read_snapshot(state.app.db) as conn:
        detail = read.get_file(conn, clean)
        if detail is None:
            raise NoteNotFoundError(clean)
        graph = graphs.graphs.get(conn)
        found, total = g.neighbors(graph, clean, "both", 1, None, NEIGHBOURS_SHOWN)
        titles = cache_graph.titles_of(conn, [n.path for n in found])
        ends = link_ends_of(conn, clean)
    data = vault.read_note(clean)
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    block = read_frontmatter(clean, text)
    body = text[block.body_start :]
    return NotePage(
        detail=detail,
        body=body[:NOTE_CHARS],
        truncated=len(body) > NOTE_CHARS,
        properties=block.data,
        frontmatter_error=block.error,
        frontmatter=text[: block.body_start] if block.error else "",
        links=NoteLinks(clean, vault.root.name, ends),
        neighbours=found,
        neighbour_total=total,
        titles=titles,
        edits=history.list_edits(state.app, clean, limit=EDITS_SHOWN, offset=0),
    )


def restore_note_edit(state: ServerState, path: str, edit_id: int) -> str:
    """Undo edit `edit_id` of the note at `path` (refused if the note changed since); the
    note's path, for the page to show next."""
    app = state.app

    def sync(expected: Mapping[str, str | None]) -> bool:
        return sync_cache(app, expected, holds_writer=state.writer)

    return history.restore_edit(app, path, edit_id, expected_hash=None, sync=sync).path


def load_graph(
    state: ServerState, graphs: GraphCache, note: str | None, folder: str | None, depth: int
) -> dict[str, Any]:
    """Cytoscape's elements: a note's neighbourhood (`neighbors`, as `get_neighbors`), or a
    folder's notes (`subgraph`, as `get_graph`)."""
    with read.read_snapshot(state.app.db) as conn:
        graph = graphs.graphs.get(conn)
        if note:
            clean = state.app.vault.check_note_path(note)
            if clean not in graph.nodes:
                raise NoteNotFoundError(clean)
            found, total = g.neighbors(graph, clean, "both", depth, None, GRAPH_NODES)
            nodes = [clean, *(n.path for n in found)]
            kept = set(nodes)
            edges = [
                (s, t) for s in nodes for t in graph.successors(s, None) if t in kept and s != t
            ]
            truncated = total > len(found)
            total_nodes = total + 1
        else:
            sub = g.subgraph(graph, folder or None, False, None, GRAPH_NODES)
            nodes = sub.nodes
            edges = [(e.source, e.target) for e in sub.edges]
            truncated = len(sub.nodes) < sub.total_nodes
            total_nodes = sub.total_nodes
    elements = [
        {"data": {"id": p, "label": graph.nodes[p].title, "start": p == note}} for p in nodes
    ]
    elements += [{"data": {"id": f"{s}->{t}", "source": s, "target": t}} for s, t in edges]
    return {"elements": elements, "totalNodes": total_nodes, "truncated": truncated}
