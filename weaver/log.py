"""Logging: structlog to stderr (stdout belongs to MCP in stdio mode).

A console renderer when stderr is a terminal, JSON lines otherwise. Configured once per entry
point; library code only calls `structlog.get_logger()`.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


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
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.ERROR)),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    # Dependencies (uvicorn, apscheduler, mcp) log through the stdlib: keep them off stdout too.
    logging.basicConfig(stream=out, level=max(_LEVELS.get(level, logging.ERROR), logging.WARNING))
