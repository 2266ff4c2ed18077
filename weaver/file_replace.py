"""Put one file in place of another (`os.replace`), waiting briefly while Windows says the
target is in use.

On Windows a rename over a file fails with a sharing violation while another program holds
that file open without sharing its deletion: Obsidian reading the note, an antivirus or a
sync client scanning it, a search indexer. Those holds last milliseconds, so the rename is
tried again a few times over about a second; after that the last error is raised, and the
caller reports the write as failed, its temporary file removed: nothing is half done.

Only those errors are retried. On POSIX a rename never fails because the target is open, and
a PermissionError there is a real refusal, raised at once, as is any other error (a full disk).
"""

from __future__ import annotations

import time
from pathlib import Path

# The pauses between tries (about 1.1 s in all): short first, since most holds are short.
RETRY_PAUSES_S = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4)
# ERROR_ACCESS_DENIED (a file being deleted, or open without FILE_SHARE_DELETE),
# ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION.
HELD_OPEN_WINERRORS = frozenset({5, 32, 33})


def replace_file(source: Path, target: Path) -> None:
    """`os.replace(source, target)`, retried while the target is held open (Windows)."""
    for pause in (*RETRY_PAUSES_S, None):
        try:
            source.replace(target)
            return
        except PermissionError as exc:
            if pause is None or not held_open(exc):
                raise
            time.sleep(pause)


def held_open(exc: OSError) -> bool:
    """Whether `exc` is Windows saying another program holds the file."""
    return getattr(exc, "winerror", None) in HELD_OPEN_WINERRORS
