"""What an evaluation is given besides the row's file: the clock, the view's formulas, `this`,
a way to find a file by its path, and the random source (all injected, so tests are exact)."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from weaver.bases.compiler import Program
from weaver.bases.values import FileFacts


def _no_files(_target: str) -> FileFacts | None:
    return None


@dataclass(frozen=True, slots=True)
class Environment:
    """The same for every row of one view. `now` is naive local time; `today` is its date.
    `find_file(target)` resolves a link target or path to a file (None: no such file)."""

    now: dt.datetime
    formulas: Mapping[str, Program] = field(default_factory=dict)
    this: FileFacts | None = None
    find_file: Callable[[str], FileFacts | None] = _no_files
    random: Callable[[], float] = random.random

    @property
    def today(self) -> dt.datetime:
        return self.now.replace(hour=0, minute=0, second=0, microsecond=0)
