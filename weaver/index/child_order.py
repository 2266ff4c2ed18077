"""One order to a short-lived child process, one answer back: the protocol of the work a
lasting process hands to a child so that the child's memory leaves with it (a first index,
`index.apart`; a burst of workflow runs, `engine.apart`).

The parent writes one pickled, framed order on the child's stdin and reads one framed answer,
`("done", value)` or `("failed", error)`, on its stdout; it keeps the child's stdin open until
then, so the child reads its end as "nobody waits for me" (the parent stopped or died). The
child ignores Ctrl-C (the parent hears it and ends the child), dies with its parent where the
platform can see to it (`workers.end_with_parent`), and sends stray prints to stderr so that
nothing corrupts its answer.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import structlog

from weaver.index.workers import end_with_parent, pack_frame, read_frame

log = structlog.get_logger(__name__)


def ask_child(
    child: subprocess.Popen[bytes], order: object, what: str, reap_s: float = 10.0
) -> object | None:
    """Give `child` (from `workers.start_child`) its `order`; the value it answers, or None
    when it ended early or failed (logged, `what` naming the work the caller now does itself).
    The child's pipes are closed and the child reaped, killed after `reap_s`."""
    assert child.stdin is not None and child.stdout is not None
    try:
        try:
            child.stdin.write(pack_frame(pickle.dumps(order, pickle.HIGHEST_PROTOCOL)))
            child.stdin.flush()
            answer = pickle.loads(read_frame(child.stdout.fileno()))
        except (OSError, ValueError, EOFError, pickle.UnpicklingError) as exc:
            log.warning(f"{what} in this process: the child ended early", error=str(exc) or None)
            return None
        match answer:
            case ("done", value):
                done: object = value
                return done
            case ("failed", error):
                log.warning(f"{what} in this process: the child failed", error=error)
        return None
    finally:
        dismiss_child(child, reap_s)


def dismiss_child(child: subprocess.Popen[bytes], reap_s: float = 10.0) -> None:
    """Close the child's pipes (the end of its stdin tells a child still running, or never
    given an order, that it is not wanted) and reap it, killed after `reap_s`."""
    with contextlib.suppress(OSError):  # the child has gone: its pipe cannot be flushed
        if child.stdin is not None:
            child.stdin.close()
    if child.stdout is not None:
        child.stdout.close()
    try:
        child.wait(timeout=reap_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def answer_order(handle: Callable[[Any, int], object], what: str) -> None:
    """The child: read one order, answer `handle(order, stdin)` (its stdin's descriptor, to
    watch for the parent's end), or the error it raised, then return. An order never sent
    (the parent stopped first) is no error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent()
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not corrupt the answer
    stdin = sys.stdin.fileno()
    try:
        order = pickle.loads(read_frame(stdin))
    except EOFError:
        return
    try:
        answer: tuple[str, object] = ("done", handle(order, stdin))
    except Exception as exc:  # reported to the parent, which does the work itself
        log.exception(f"{what} in a child process failed")
        answer = ("failed", f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(OSError):  # the parent has gone: nobody waits for the answer
        out.write(pack_frame(pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)))
        out.close()
