"""An idle `weaver daemon` sleeps: once its work is done, nothing wakes it but what it waits on.

The count is of wake-ups, not of CPU time: the kernel's voluntary context switches of every
thread of the process (each time a thread sleeps and is woken), which a busy machine does not
change. The vault's debounce is set to a second, so that the watcher's own step (watchfiles
looks for changes once per debounce) wakes it once a second; every other wake-up comes from a
poll or a timer of Weaver's (uvicorn's tick, the watcher's round trips, the corruption and
lock checks, the workflow engine's poll).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import free_port, wait_for, write_files
from tests.host.test_daemon import Daemon

pytestmark = pytest.mark.slow

WINDOW_S = 6.0
# Wake-ups a second allowed: the watcher's step (1), the corruption check (0.5), the writer
# lock's check (0.5), their hand-overs to worker threads, and the workflow engine's poll
# backing off; before this bound, uvicorn's tick alone woke the daemon ten times a second.
MOST_WAKEUPS_PER_S = 8.0


def wakeups(pid: int) -> dict[str, int]:
    """Thread id -> its voluntary context switches so far, for every thread of the process."""
    counts = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        for line in status.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                counts[task.name] = int(line.split()[1])
    return counts


def rate(pid: int, seconds: float) -> float:
    """Wake-ups a second over the next `seconds`, by thread: a worker thread that ends in
    between (anyio lets idle ones go) takes its count with it, which must not subtract."""
    before = wakeups(pid)
    time.sleep(seconds)
    after = wakeups(pid)
    return sum(count - before.get(tid, 0) for tid, count in after.items()) / seconds


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts wake-ups in /proc")
def test_an_idle_daemon_wakes_rarely(tmp_path: Path) -> None:
    vault = write_files(
        tmp_path / "vault",
        {f"n{i}.md": f"# Note {i}\nSee [[n{(i + 1) % 20}]] #idle\n" for i in range(20)},
    )
    port = free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'vault = "{vault}"\nhttp_port = {port}\ndebounce_ms = 1000\nsemantic = false\n',
        encoding="utf-8",
    )
    daemon = Daemon(vault, config, port, tmp_path / "daemon.log")
    process = daemon.start()
    try:
        # The first index's workflows: done, and the engine's poll backed off.
        wait_for(lambda: not daemon._read(UNFINISHED), 30, "the first workflows to end")
        time.sleep(WINDOW_S)
        measured = rate(process.pid, WINDOW_S)
        assert measured <= MOST_WAKEUPS_PER_S, f"{measured:.1f} wake-ups a second while idle"
        # Still awake to what matters: a request is answered, with a current Date header.
        assert daemon.healthy()
    finally:
        assert daemon.stop(process) == 0


UNFINISHED = "SELECT id FROM executions WHERE status IN ('pending', 'running')"
