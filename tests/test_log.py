"""The log keeps the lines bound to each execution, for the dashboard's run page."""

from __future__ import annotations

import io

import structlog

from weaver.log import EXECUTION_LOGS, ExecutionLogs, configure_logging


def test_lines_bound_to_an_execution_are_kept_in_a_ring() -> None:
    logs = ExecutionLogs(per_execution=2, kept=2)
    for n in range(3):
        logs.capture(None, "info", {"event": f"step {n}", "execution_id": "a", "n": n})
    logs.capture(None, "info", {"event": "unbound"})
    assert logs.lines_of("a") == [{"event": "step 1", "n": "1"}, {"event": "step 2", "n": "2"}]
    logs.capture(None, "info", {"event": "b", "execution_id": "b"})
    logs.capture(None, "info", {"event": "c", "execution_id": "c"})
    assert logs.lines_of("a") == []  # the oldest execution forgotten first
    assert logs.lines_of("c") == [{"event": "c"}]


def test_configured_logging_feeds_the_execution_logs() -> None:
    out = io.StringIO()
    configure_logging("info", "json", stream=out)
    structlog.get_logger("t").bind(execution_id="wf_exec_log_test").info("hello", path="a.md")
    (line,) = EXECUTION_LOGS.lines_of("wf_exec_log_test")
    assert (line["event"], line["path"], line["level"]) == ("hello", "a.md", "info")
    assert '"execution_id": "wf_exec_log_test"' in out.getvalue()
