"""A stand-in for Windows' `msvcrt` (its `locking` only) over Linux's open-file-description
byte-range locks (`F_OFD_SETLK`), so the Windows path of `weaver.file_locks` runs on Linux, two
processes really excluding each other.

As on Windows: `locking(fd, mode, nbytes)` locks `nbytes` from the file's position;
`LK_NBLCK` fails at once with EACCES, `LK_LOCK` tries ten times and then fails with
EDEADLOCK; the lock belongs to the open file (two descriptors opened apart exclude each other,
in one process too) and the OS drops it when that is closed or the process ends, however it
ends. Unlike Windows: `LK_LOCK`'s tries are `RETRY_S` apart rather than a second (the tests
stay short); a read-only descriptor gets a read lock, which OFD locks allow (it still cannot be
had while another holds the range); and a locked range is not mandatory (Windows refuses other
handles' reads of it).

Register it as `sys.modules["msvcrt"]` after the process's imports rather than putting it on
the path: the standard library's `subprocess` takes an importable `msvcrt` for Windows.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
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
        _ofd_lock(fd, fcntl.F_UNLCK, start, nbytes)
        return
    read_only = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    kind = fcntl.F_RDLCK if read_only else fcntl.F_WRLCK
    tries = 1 if mode in (LK_NBLCK, LK_NBRLCK) else TRIES
    for attempt in range(tries):
        if attempt:
            time.sleep(RETRY_S)
        try:
            _ofd_lock(fd, kind, start, nbytes)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
        else:
            return
    code = errno.EACCES if tries == 1 else errno.EDEADLOCK
    raise OSError(code, os.strerror(code))


def _ofd_lock(fd: int, kind: int, start: int, length: int) -> None:
    """`fcntl(F_OFD_SETLK)` with Linux's `struct flock` (type, whence, start, len, pid: 0)."""
    flock = struct.pack("@hhqqi4x", kind, os.SEEK_SET, start, length, 0)
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, flock)
