"""What every `weaver` command shares: its signature and its exit codes.

Exit codes: 0 success, 1 a runtime failure, 2 bad usage or configuration (argparse's own code).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from weaver.config import Settings

Command = Callable[[argparse.Namespace, Settings], int]
EXIT_FAILURE = 1
EXIT_USAGE = 2
