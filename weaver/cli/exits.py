"""What every `weaver` command shares: its signature, how its parser is declared, and its exit
codes.

Exit codes: 0 success, 1 a runtime failure, 2 bad usage or configuration (argparse's own code).

Light on purpose: every command module declares its parser with this alone, so that building
the parser (and `weaver --help`) imports nothing a command only needs once it runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the settings' module imports pydantic and SQLAlchemy
    from weaver.config import Settings

Command = Callable[[argparse.Namespace, "Settings"], int]
# A command that needs no vault nor settings (`weaver service uninstall`), declared with
# `set_defaults(bare_command=...)`.
BareCommand = Callable[[argparse.Namespace], int]
EXIT_FAILURE = 1
EXIT_USAGE = 2


def add_command(commands: Any, name: str, summary: str, details: str) -> argparse.ArgumentParser:
    """A subcommand with a one-line summary (in `weaver --help`) and a paragraph of its own."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=f"{summary[0].upper()}{summary[1:]}.\n\n{details}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser
