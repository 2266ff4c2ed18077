"""`python -m weaver.cli`: the same as the `weaver` command."""

from weaver.cli import run

run()
