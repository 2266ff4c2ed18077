"""A `weaver index` killed with -9 takes its parse workers with it (they used to go on
parsing for seconds, until their pipe broke): on Linux through prctl, and where prctl does not
exist (macOS, Windows) because the worker's stdin ends while it still has work."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import WriteNotes, wait_for

# A parent that starts one worker (made slow: each chunk takes SLOW_S), says its pid, and is
# killed with -9 mid-pass. PRCTL is "keep", or "none" to leave the worker as on macOS/Windows.
PARENT = """
import os, queue, sys
from weaver.index import workers
from weaver.index.workers import ParseWorker
from weaver.vault.fs import Vault

workers._WORKER_CODE = (
    "import time\\n"
    "from weaver.index import workers as w\\n"
    "parse = w.read_chunk\\n"
    "def slowly(*a):\\n"
    f"    time.sleep({float(sys.argv[2])})\\n"
    "    return parse(*a)\\n"
    "w.read_chunk = slowly\\n"
    + ("w.end_with_parent = lambda: None\\n" if sys.argv[3] == "none" else "")
    + "w.serve_worker()\\n"
)
vault = Vault(__import__("pathlib").Path(sys.argv[1]))
work = [(s, None) for s in vault.scan()]
worker = ParseWorker(vault, [[item] for item in work], False, queue.SimpleQueue())
worker.send()
print(worker.process.pid, flush=True)
sys.stdin.readline()
os.kill(os.getpid(), 9)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


@pytest.mark.parametrize(
    ("prctl", "slow_s", "within_s"),
    [
        pytest.param(
            "keep",
            30,  # a chunk outlasting the test: only the kernel can end it in time
            5,
            marks=pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux prctl"),
        ),
        ("none", 30, 5),  # as on macOS and Windows: mid-chunk, its stdin ends
    ],
)
def test_a_killed_index_leaves_no_worker_running(
    write_notes: WriteNotes, vault_dir: Path, prctl: str, slow_s: float, within_s: float
) -> None:
    write_notes({f"n{i}.md": f"note {i}" for i in range(60)})
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT), str(vault_dir), str(slow_s), prctl],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as parent:
        assert parent.stdout is not None and parent.stdin is not None
        worker = int(parent.stdout.readline())
        assert alive(worker)
        parent.stdin.write("go\n")
        parent.stdin.flush()
        assert parent.wait(timeout=10) == -9
    wait_for(lambda: not alive(worker), within_s, "the orphaned worker to end")
