"""A `weaver index` killed with -9 takes its parse workers with it (they used to go on
parsing for seconds, until their pipe broke)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import WriteNotes, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux prctl")

# A parent that starts one worker (made slow, with a share to last a minute), says its pid,
# and is killed with -9 mid-pass.
PARENT = """
import os, sys
from weaver.index import workers
from weaver.index.workers import ParseWorker
from weaver.vault.fs import Vault

workers._WORKER_CODE = (
    "import time\\n"
    "from weaver.index import workers as w\\n"
    "parse = w.read_chunk\\n"
    "def slowly(*a):\\n"
    "    time.sleep(30)\\n"
    "    return parse(*a)\\n"
    "w.read_chunk = slowly\\n"
    "w.serve_worker()\\n"
)
vault = Vault(__import__("pathlib").Path(sys.argv[1]))
work = [(s, None) for s in vault.scan()]
worker = ParseWorker(vault, [[item] for item in work], reparse=False)
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


def test_a_killed_index_leaves_no_worker_running(write_notes: WriteNotes, vault_dir: Path) -> None:
    write_notes({f"n{i}.md": f"note {i}" for i in range(60)})
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT), str(vault_dir)],
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
    wait_for(lambda: not alive(worker), 5, "the orphaned worker to end")
