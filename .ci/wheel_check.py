"""Use an installed Weaver as a user would, on any platform: the checks a release runs on
Linux, macOS and Windows after installing the one wheel it built, and `.ci/install-check` here.

    python wheel_check.py /path/to/venv/bin/weaver /path/to/demo-vault

Copies the vault to a temporary folder, then: `--version`, `index`, `workflows` (every built-in
workflow loads), `trigger markdown-analyzer`, and an MCP stdio session (`mcp_session.py`).
Exits non-zero, naming the step and showing its output, on the first failure.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BUILT_IN = (
    "concept-tracker",
    "proof-daily-digest",
    "file-change-logger",
    "file-deletion-monitor",
    "markdown-analyzer",
    "proof-spec-kit-review",
    "proof-task-complete",
)


def run(*command: str) -> str:
    """Run one step; its output, or exit naming it."""
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stdout}{done.stderr}")
    print(done.stdout, end="", flush=True)
    return done.stdout


def check(weaver: str, demo_vault: Path) -> None:
    with tempfile.TemporaryDirectory() as work:
        vault = str(Path(work) / "vault")
        # A checkout's demo vault may hold its own cache: the user starts with none.
        shutil.copytree(demo_vault, vault, ignore=shutil.ignore_patterns(".weaver"))
        run(weaver, "--version")
        run(weaver, "--vault", vault, "index")
        listed = {
            line.split()[0]
            for line in run(weaver, "--vault", vault, "workflows").splitlines()
            if line.strip()
        }
        missing = [name for name in BUILT_IN if name not in listed]
        if missing:
            sys.exit(f"built-in workflows missing: {', '.join(missing)}")
        run(
            weaver,
            "--vault",
            vault,
            "trigger",
            "markdown-analyzer",
            "--input",
            '{"path": "Welcome.md"}',
        )
        run(sys.executable, str(Path(__file__).with_name("mcp_session.py")), weaver, vault)
    print("wheel check passed")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    # On Windows the command is weaver.exe: `which` finds it from the name without the suffix.
    check(shutil.which(sys.argv[1]) or sys.argv[1], Path(sys.argv[2]))
