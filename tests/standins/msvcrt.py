"""A stand-in for Windows' `msvcrt` (its `locking` only) over `fcntl.lockf` byte ranges, so the
Windows path of `weaver.file_locks` runs on Linux, two processes really excluding each other.

As on Windows: `locking(fd, mode, nbytes)` locks `nbytes` from the file's position;
`LK_NBLCK` fails at once with EACCES, `LK_LOCK` tries ten times and then fails with
EDEADLOCK; the OS drops the lock when the process ends, however it ends. Unlike Windows:
`LK_LOCK`'s tries are `RETRY_S` apart rather than a second (the tests stay short); a lockf
lock belongs to the process, so two descriptors of one process do not exclude each other and
closing either drops both (the tests exclude across processes); a read-only descriptor gets
a read lock, which lockf allows (it still cannot be had while another process holds the
range); and a locked range is not mandatory (Windows refuses other handles' reads of it).

Register it as `sys.modules["msvcrt"]` after the process's imports rather than putting it on
the path: the standard library's `subprocess` takes an importable `msvcrt` for Windows.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time

LK_UNLCK = 0
LK_LOCK = 1
LK_NBLCK = 2
LK_RLCK = 3
LK_NBRLCK = 4
TRIES = 10
RETRY_S = 0.05


def locking(fd: int, mode: int, nbytes: int, /) -> None:
    start = os.lseek(fd, 0, os.SEEK_CUR)
    if mode == LK_UNLCK:
        fcntl.lockf(fd, fcntl.LOCK_UN, nbytes, start, os.SEEK_SET)
        return
    read_only = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    kind = (fcntl.LOCK_SH if read_only else fcntl.LOCK_EX) | fcntl.LOCK_NB
    tries = 1 if mode in (LK_NBLCK, LK_NBRLCK) else TRIES
    for attempt in range(tries):
        if attempt:
            time.sleep(RETRY_S)
        try:
            fcntl.lockf(fd, kind, nbytes, start, os.SEEK_SET)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
        else:
            return
    code = errno.EACCES if tries == 1 else errno.EDEADLOCK
    raise OSError(code, os.strerror(code))
