"""What the `weaver` command line shows a person: progress, summaries and tables.

Rendering only: `weaver.cli` runs the commands and hands their results here. Everything is text
for stdout, except `IndexDisplay`, which draws on a terminal's stderr (stdout keeps the summary,
so `weaver index > log` still shows the bar). `--json` output is printed by the CLI itself and
never passes through here.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO, cast

from rich.console import Console
from rich.file_proxy import FileProxy
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

if TYPE_CHECKING:  # the engine's package is not imported to start `serve` or `index`
    from weaver.cache.executions import ExecutionOutputs
    from weaver.engine.payloads import TriggerWorkflowData, WorkflowStatusData

# A pass shorter than this shows no bar at all: a flash of one is noise, not news.
BAR_DELAY_S = 1.0
# Characters of a record's data shown in `weaver records`' table.
RECORD_WIDTH = 80
# Values of a workflow's result shown in `weaver trigger`'s summary.
RESULT_ITEMS = 8
RESULT_TEXT_WIDTH = 60
# Characters of a search hit's passage in `weaver search`'s table.
PASSAGE_WIDTH = 60
# What a snippet shows a reader nothing by: images and badges (`[![build](svg)](url)`, cut
# or whole), a link's URL (its text stays), bare URLs, and the brackets they leave empty.
_IMAGE = re.compile(r"\[?!\[[^\]\n]*\](?:\([^)\s]*\)?)?(?:\]\([^)\s]*\)?)?")
_URL_LINK = re.compile(r"\[([^\]\n]*)\]\((?:[a-z]+:)?//[^)\s]*\)?")
_BARE_URL = re.compile(r"<?\b(?:https?|ftp)://[^\s>)\]]*>?")
_EMPTY_BRACKETS = re.compile(r"\[\s*\]|\(\s*\)")
_MARKS = re.compile(r"</?mark>")
# Paths of a file-triggered run's events shown in `weaver status` (a first index has thousands).
EVENT_PATHS = 5


class _RateColumn(ProgressColumn):
    """Notes per second, once rich has seen enough of the pass to tell."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.0f} notes/s", style="progress.data.speed")


class IndexDisplay:
    """`weaver index` on a terminal: a `PassObserver` drawing a bar with rate and ETA once a
    pass has lasted `delay` seconds, and each note that failed to parse on its own line above
    the bar. The bar is erased at the end, leaving the warnings and the summary."""

    def __init__(
        self,
        console: Console,
        delay: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self._delay = BAR_DELAY_S if delay is None else delay
        self._clock = clock
        self._started = clock()
        self._progress: Progress | None = None
        self._task: Any = None

    def notes_read(self, done: int, total: int) -> None:
        if self._progress is None:
            if self._clock() - self._started < self._delay or done >= total:
                return
            self._start_bar(total)
        assert self._progress is not None
        self._progress.update(self._task, completed=done, total=total)

    def note_failed(self, path: str, error: str) -> None:
        line = Text.assemble(("warning", "bold yellow"), f" {path}: {without_path(error, path)}")
        self.console.print(line, soft_wrap=True, highlight=False)

    def _start_bar(self, total: int) -> None:
        self._progress = Progress(
            TextColumn("Indexing"),
            BarColumn(),
            TextColumn("{task.completed:,}/{task.total:,} notes"),
            _RateColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            # Anything else written to stderr meanwhile (a Python warning) lands above the bar
            # too; stdout may be a file, and nothing prints there before the summary.
            redirect_stdout=False,
        )
        self._task = self._progress.add_task("index", total=total)
        self._progress.start()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> IndexDisplay:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _trace: TracebackType | None,
    ) -> None:
        self.close()


class _AboveTheBar(FileProxy):
    """A console's stream for log lines: each is printed above a live bar, never on it. A
    terminal's, so that logging renders for a person."""

    def isatty(self) -> bool:
        return True


def log_stream(console: Console) -> TextIO:
    """Where log lines go while `IndexDisplay` may be drawing on `console`."""
    return cast(TextIO, _AboveTheBar(console, console.file))


def without_path(error: str, path: str) -> str:
    """The parser ends its errors with the note's path; shown after the path, once is enough."""
    suffix = f" ({path})"
    return error[: -len(suffix)] if error.endswith(suffix) else error


def format_index_summary(vault: Path, summary: dict[str, Any]) -> str:
    counts = ", ".join(f"{summary[k]:,} {k}" for k in ("added", "updated", "removed", "moved"))
    return (
        f"Indexed {vault}: {counts}, {summary['unchanged']:,} unchanged, "
        f"{summary['errors']:,} with errors, {summary['relinked']:,} links re-resolved "
        f"in {summary['seconds']:.2f}s"
    )


def format_kept_cache(
    vault: Path, holder: str, notes: int, last_change: int | None, now_ms: int
) -> str:
    """`weaver index` while another process writes the cache: that writer's state."""
    pid = f"pid {holder}" if holder.isdigit() else holder
    change = "no change yet" if last_change is None else f"last change {ago(last_change, now_ms)}"
    count = f"{notes:,} note{'' if notes == 1 else 's'}"
    return f"The cache of {vault} is kept fresh by {pid}: {count}, {change}. Nothing to do."


def ago(ms: int, now_ms: int) -> str:
    """`3 s ago`, `12 min ago`, `5 h ago`, `4 days ago` (`just now` for a clock running late)."""
    seconds = max(now_ms - ms, 0) // 1000
    if seconds < 1:
        return "just now"
    for unit, size in (("days", 86_400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def when(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def clip(text: str, width: int = RECORD_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_passage(snippet: str, width: int = PASSAGE_WIDTH) -> str:
    """A search snippet on one line of a table: no highlight tags, no image or badge markup,
    no URLs, newlines and runs of spaces made one space, clipped to `width`."""
    text = _MARKS.sub("", snippet)
    text = _URL_LINK.sub(r"\1", _IMAGE.sub(" ", text))
    text = _EMPTY_BRACKETS.sub(" ", _BARE_URL.sub(" ", text))
    return clip(" ".join(text.split()), width)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain columns, two spaces apart: readable, and `cut`/`awk` friendly."""
    if not rows:
        return ""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines)


def format_state(status: str, progress: int, attempt: int) -> str:
    """A run's state for `weaver status`: the percentage only while it means something (a run
    that failed after reporting 100 % did not finish its work)."""
    tries = f"attempt {attempt}"
    match status:
        case "running":
            return f"running, {progress}%, {tries}"
        case "pending":
            return "pending"
        case "completed":
            return f"completed, {tries}"
        case _ if 0 < progress < 100:
            return f"{status} at {progress}%, {tries}"
        case _:
            return f"{status}, {tries}"


def format_status(status: WorkflowStatusData) -> str:
    lines = {
        "execution": status.execution_id,
        "workflow": f"{status.workflow_id} ({status.workflow_name})",
        "status": format_state(status.status, status.progress, status.attempt),
        "trigger": format_trigger_detail(status.trigger.kind, status.trigger.detail),
        "input": json.dumps(status.input),
        "created": when(status.created_time),
        "started": when(status.start_time),
        "ended": when(status.end_time),
        "duration": "" if status.duration is None else f"{status.duration} ms",
        "process": status.process or "",
        "message": status.message or "",
        "result": "" if status.result is None else json.dumps(status.result, ensure_ascii=False),
        "error": status.error or "",
    }
    text = [f"{key + ':':<10} {value}" for key, value in lines.items() if value]
    if len(status.trigger.detail.get("events", ())) > EVENT_PATHS:
        text.append(f"{'':<10} every event: weaver status {status.execution_id} --json")
    if status.traceback:
        text.append(status.traceback.rstrip())
    return "\n".join(text)


def format_trigger_detail(kind: str, detail: dict[str, Any]) -> str:
    """How a run was started, in one line: a file-triggered run's events counted by kind with
    the first few paths (a run started by a first index holds one event per note)."""
    events = detail.get("events")
    if kind != "file" or not isinstance(events, list):
        return f"{kind} {json.dumps(detail)}"
    kinds: dict[str, int] = {}
    for event in events:
        kinds[event["kind"]] = kinds.get(event["kind"], 0) + 1
    counts = ", ".join(f"{count:,} {name}" for name, count in kinds.items())
    paths = ", ".join(event["path"] for event in events[:EVENT_PATHS])
    more = len(events) - EVENT_PATHS
    noun = "event" if len(events) == 1 else "events"
    return f"file, {len(events):,} {noun} ({counts}): {paths}" + (
        f", … {more:,} more" if more > 0 else ""
    )


def format_trigger(result: TriggerWorkflowData, outputs: ExecutionOutputs | None) -> str:
    """`weaver trigger`'s answer in a few lines: what ran, how it ended, what it returned in
    brief, and where its output went. `--json` has the whole result."""
    if result.mode == "async":
        return f"{result.message}: {result.execution_id} (weaver status {result.execution_id})"
    duration = "" if result.duration is None else f" in {result.duration:,} ms"
    lines = [f"{result.workflow_id} {result.status}{duration} ({result.execution_id})"]
    if result.error:
        lines.append(f"  error:   {result.error}")
    if result.result is not None:
        lines.append(f"  result:  {summarise_result(result.result)}")
    if outputs is not None:
        lines += _output_lines(result, outputs)
    lines.append(f"  details: weaver status {result.execution_id} (or --json)")
    return "\n".join(lines)


def summarise_result(result: object) -> str:
    """Counts and short values of a workflow's result: a list shows its length, a nested
    object its size; the rest is left to `--json`."""
    if not isinstance(result, dict):
        return clip(json.dumps(result, ensure_ascii=False), RESULT_TEXT_WIDTH)
    items = [f"{key} {_brief(value)}" for key, value in result.items()]
    shown = ", ".join(items[:RESULT_ITEMS])
    more = len(items) - RESULT_ITEMS
    return shown + (f", … {more} more" if more > 0 else "") if items else "{}"


def _brief(value: object) -> str:
    match value:
        case bool() | None:
            return json.dumps(value)
        case int() | float():
            return f"{value:,}"
        case str():
            return clip(value, RESULT_TEXT_WIDTH)
        case list():
            return f"[{len(value):,}]"
        case dict():
            return f"{{{len(value):,}}}"
        case _:
            return clip(str(value), RESULT_TEXT_WIDTH)


def _output_lines(result: TriggerWorkflowData, outputs: ExecutionOutputs) -> list[str]:
    lines = []
    for label, paths in (("wrote", outputs.written), ("deleted", outputs.deleted)):
        if paths:
            shown = ", ".join(paths[:RESULT_ITEMS])
            more = len(paths) - RESULT_ITEMS
            lines.append(f"  {label + ':':<8} {shown}" + (f", … {more} more" if more > 0 else ""))
    if outputs.records:
        kinds = ", ".join(f"{count:,} {kind}" for kind, count in outputs.records.items())
        lines.append(f"  records: {kinds} (weaver records {result.workflow_id})")
    return lines
