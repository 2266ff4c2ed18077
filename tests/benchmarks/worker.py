"""Run one measurement in a fresh interpreter: `python -m tests.benchmarks.worker TASK JSON`.

The driver generates vaults and holds results; anything it measures about Weaver runs here, so
timings and peak RSS (`ru_maxrss` of this process alone) are those of a clean process that
imported only what the task needs. The task's result dict is printed as the last stdout line.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# task name -> "module:function"; the function takes JSON keyword arguments, returns a JSON dict.
TASKS = {
    "floor": "tests.benchmarks.indexing:measure_floor",
    "index": "tests.benchmarks.indexing:measure_index",
    "queries": "tests.benchmarks.queries:measure_queries",
    "kept_memory": "tests.benchmarks.queries:measure_kept_memory",
}


class WorkerError(RuntimeError):
    """A measurement process failed; carries the tail of its stderr."""


def clean_env() -> dict[str, str]:
    """The caller's environment without `WEAVER_*`, so a developer's settings cannot leak in,
    but with every toolset served: the bench measures every tool."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEAVER_")}
    return {**env, "WEAVER_TOOLSETS": "all"}


def run_worker(task: str, timeout: float = 1800, **kwargs: Any) -> dict[str, Any]:
    """Run `task` in a child interpreter and return its result, with the summed peak RSS of
    the processes it started in turn (`children_peak_rss_mb`: the indexer's parse workers)."""
    command = [sys.executable, "-m", "tests.benchmarks.worker", task, json.dumps(kwargs)]
    proc = subprocess.Popen(
        command,
        cwd=REPO,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peaks: dict[int, float] = {}
    sampler = threading.Thread(target=_sample_children, args=(proc, peaks), daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate(timeout=timeout)
    sampler.join()
    lines = stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise WorkerError(f"worker {task} failed ({proc.returncode}):\n{stderr[-4000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    result["children_peak_rss_mb"] = sum(peaks.values())  # they run side by side
    return result


def _sample_children(proc: subprocess.Popen[str], peaks: dict[int, float]) -> None:
    """Every 50 ms, the high-water RSS of each child of `proc` (`ru_maxrss` of children is no
    use here: Linux charges a child with its parent's peak when it execs after a vfork)."""
    from tests.helpers import child_pids  # the driver's side only: the worker imports little

    while proc.poll() is None:
        for pid in child_pids(proc.pid):
            try:
                peaks[pid] = max(peaks.get(pid, 0.0), rss_mb(pid)[1])
            except (OSError, KeyError):  # it exited meanwhile
                continue
        time.sleep(0.05)


def peak_rss_mb() -> float:
    """This process's peak resident set so far (Linux reports `ru_maxrss` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(current, peak) resident set of a live process, from /proc/<pid>/status."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def main(argv: list[str]) -> int:
    task, raw = argv
    module, _, name = TASKS[task].partition(":")
    function = getattr(importlib.import_module(module), name)
    result = function(**json.loads(raw))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
