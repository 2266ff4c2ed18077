"""Logging: structlog to stderr (stdout belongs to MCP in stdio mode).

A console renderer when stderr is a terminal, JSON lines otherwise. Configured once per entry
point; library code only calls `structlog.get_logger()`.

`EXECUTION_LOGS` keeps the last log events bound to each workflow execution (`execution_id`),
for the dashboard's run page: a ring per execution, the oldest executions forgotten first. It
is process-wide because structlog's configuration is: events reach it only through the
processor chain that `configure_logging` installs.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
# Log events kept per execution, and executions kept.
LINES_PER_EXECUTION = 200
EXECUTIONS_KEPT = 2_000


class ExecutionLogs:
    """The last log events of the most recent executions, as plain dicts of strings."""

    def __init__(self, per_execution: int = LINES_PER_EXECUTION, kept: int = EXECUTIONS_KEPT):
        self._per_execution = per_execution
        self._kept = kept
        self._lines: OrderedDict[str, deque[dict[str, str]]] = OrderedDict()
        self._lock = threading.Lock()

    def capture(
        self, _logger: object, _method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        """A structlog processor: copy an event bound to an execution, pass it on unchanged."""
        execution_id = event.get("execution_id")
        if isinstance(execution_id, str):
            line = {key: str(value) for key, value in event.items() if key != "execution_id"}
            with self._lock:
                ring = self._lines.get(execution_id)
                if ring is None:
                    ring = self._lines[execution_id] = deque(maxlen=self._per_execution)
                    while len(self._lines) > self._kept:
                        self._lines.popitem(last=False)
                ring.append(line)
        return event

    def lines_of(self, execution_id: str) -> list[dict[str, str]]:
        with self._lock:
            return list(self._lines.get(execution_id, ()))


EXECUTION_LOGS = ExecutionLogs()


def configure_logging(level: str = "info", fmt: str = "auto", stream: TextIO | None = None) -> None:
    """Send every structlog event (and stdlib logging of our dependencies) to `stream`."""
    out = stream or sys.stderr
    use_console = fmt == "console" or (fmt == "auto" and out.isatty())
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer(colors=out.isatty())
        if use_console
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            EXECUTION_LOGS.capture,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.ERROR)),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    # Dependencies (uvicorn, apscheduler, mcp) log through the stdlib: keep them off stdout too.
    logging.basicConfig(stream=out, level=max(_LEVELS.get(level, logging.ERROR), logging.WARNING))
