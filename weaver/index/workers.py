"""Reading and parsing the notes of an indexing pass, on every core when the pass is big.

A big pass (a first index, `weaver index --full`, a large checkout) hands its notes to parse
worker processes and writes what they send back while they parse on; a small pass, the watcher's
usual case, parses here. A worker is a plain `python -c` child: it gets its share of the files
on stdin and sends each parsed chunk back as a framed pickle on stdout, keeping up to `AHEAD`
chunks ready. When the indexer is the quicker of the two, it parses chunks from the back of a
worker's share itself (`_share`) and tells the worker where to stop. Both ends wait on their
pipes in threads, not with `select`, which Windows allows only on sockets.

Should a worker fail to start or die, the indexer parses its remaining chunks itself: slower,
and nothing lost. An error inside the parser is raised here as it would be without workers. Why:
docs/architecture.md, "index/workers.py".
"""

from __future__ import annotations

import hashlib
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

import structlog

from weaver.cache.rows import NoteRecord, StoredFile, task_row
from weaver.canvas.contents import CanvasContents, read_contents
from weaver.errors import too_large
from weaver.markdown.cjk import segment
from weaver.markdown.parser import decode_note, parse_note
from weaver.vault.fs import MAX_NOTE_BYTES, FileStat, Vault, is_canvas_path

log = structlog.get_logger(__name__)

# Notes per chunk: big enough that pickling and the pipe are noise, small enough that the
# first chunk is back soon after the worker starts.
CHUNK = 250
# Parsed chunks a worker holds ready while the indexer writes: about one write batch.
AHEAD = 8
# Below this many notes to read, a worker costs more to start than it saves.
PARALLEL_MIN = 2000
# More workers than this only wait for the single writer.
MAX_WORKERS = 4
# The folder holding this `weaver` package (this file is weaver/index/workers.py).
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_WORKER_CODE = "from weaver.index.workers import serve_worker; serve_worker()"


Work = tuple[FileStat, StoredFile | None]  # a file to read, and what the cache had for it


@dataclass
class ReadChunk:
    """What reading some files found: notes to write, notes only touched, files gone."""

    records: list[NoteRecord] = field(default_factory=list)
    touched: list[FileStat] = field(default_factory=list)  # same bytes: new mtime only
    vanished: list[str] = field(default_factory=list)  # deleted between the walk and the read
    unchanged: int = 0  # files whose bytes hash as before

    @property
    def files(self) -> int:
        return len(self.records) + len(self.touched) + len(self.vanished)


def default_workers() -> int:
    """One fewer than the CPUs this process may use (the writer needs one), at most 4."""
    if sys.platform == "linux":
        cpus = len(os.sched_getaffinity(0))  # less than the machine's in a container or taskset
    else:
        cpus = os.cpu_count() or 1
    return max(0, min(cpus - 1, MAX_WORKERS))


def read_notes(
    vault: Vault,
    work: Sequence[Work],
    reparse: bool,
    workers: int,
) -> Generator[ReadChunk, None, None]:
    """Read and parse `work` in chunks, yielded as they are ready (not in order). Closing the
    generator before its end (the indexer's write failed, or Ctrl-C) ends the workers."""
    chunks = [work[start : start + CHUNK] for start in range(0, len(work), CHUNK)]
    if workers < 1 or len(work) < PARALLEL_MIN:
        for files in chunks:
            yield read_chunk(vault, files, reparse)
        return
    count = min(workers, len(chunks))
    arrivals: queue.SimpleQueue[ParseWorker] = queue.SimpleQueue()
    started = [ParseWorker(vault, chunks[i::count], reparse, arrivals) for i in range(count)]
    try:
        for worker in started:  # after every start: they import side by side
            worker.send()
        yield from _share(started, arrivals)
    finally:
        for worker in started:
            worker.close()


def _share(
    workers: list[ParseWorker], arrivals: queue.SimpleQueue[ParseWorker]
) -> Iterator[ReadChunk]:
    """The workers' chunks as they come; whenever none is ready, a chunk parsed here.

    The caller writes each chunk it gets, and on two cores the writer is often quicker than a
    worker: rather than wait, this process takes the last chunk a worker has not reached yet
    and parses it itself (while the workers start, too). Workers go through their chunks from
    the front and this process from the back, so they meet once, near the middle."""
    streaming = list(workers)
    while streaming:
        ready = _arrived(streaming, arrivals, wait=False)
        if not ready:
            spare = max(streaming, key=lambda w: w.unclaimed())
            if spare.unclaimed() > 0:
                yield spare.parse_claimed()
                continue
            ready = _arrived(streaming, arrivals, wait=True)
        for worker in ready:
            if worker.finished:  # its reader still reports the end of the stream: ignored
                continue
            chunk = worker.receive()
            if chunk is not None:
                yield chunk
            if worker.finished:
                streaming.remove(worker)


def _arrived(
    workers: list[ParseWorker], arrivals: queue.SimpleQueue[ParseWorker], wait: bool
) -> list[ParseWorker]:
    """The workers with something to receive (a frame, the end of their stream, or a failure
    to start), once per frame: `arrivals` holds a worker each time its reader got a frame."""
    failed = [w for w in workers if w.failure is not None]
    if failed:
        return failed
    ready = []
    try:
        ready.append(arrivals.get(block=wait))
        while True:
            ready.append(arrivals.get_nowait())
    except queue.Empty:
        pass
    return ready


class ParseWorker:
    """One worker process and the chunks it was given (parsed here if it cannot finish).

    Chunks go both ways in frames (`pack_frame`): the request, then each parsed chunk with its
    index. This process claims a chunk from the back by writing one byte to the worker's
    stdin; the worker counts those bytes and stops where the claims begin. A chunk both of
    them parsed (the worker had started it when it was claimed) is yielded once: the worker's
    copy is dropped.

    A reader thread takes the worker's frames off its stdout into `_frames`, at most `AHEAD`
    ahead (past that it stops reading and the worker waits), and puts this worker on the
    shared `arrivals` queue for each."""

    def __init__(
        self,
        vault: Vault,
        chunks: Sequence[Sequence[Work]],
        reparse: bool,
        arrivals: queue.SimpleQueue[ParseWorker],
    ) -> None:
        self.vault, self.chunks, self.reparse = vault, chunks, reparse
        self.failure: str | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.next_index = 0  # the worker sends its chunks in order: the next one expected
        self.claimed = 0  # chunks taken from the back by this process
        self.reported = False  # its failure, in the log
        self.finished = False  # every chunk of its share is in (from it, or parsed here)
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._feeder = threading.Thread(target=self._feed, daemon=True)
        self._arrivals = arrivals
        self._frames: queue.Queue[bytes | Exception] = queue.Queue(maxsize=AHEAD)
        self._reader = threading.Thread(target=self._read, daemon=True)
        try:
            self.process = start_child(_WORKER_CODE)
        except OSError as exc:  # no interpreter to run (embedded Python), out of processes
            self.failure = f"cannot start: {exc}"

    def send(self) -> None:
        """Hand the worker its chunks, from a thread: the pipe takes 64 KB until the worker
        has imported and reads, and this process parses meanwhile."""
        if self.process is None:
            return
        request = (self.vault, self.chunks, self.reparse)
        self._outbox.put(pack_frame(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)))
        self._feeder.start()
        self._reader.start()

    def unclaimed(self) -> int:
        """Chunks at the back that this process may still take: not the one the worker is
        probably parsing now."""
        return len(self.chunks) - self.claimed - self.next_index - 1

    def parse_claimed(self) -> ReadChunk:
        self.claimed += 1
        self._outbox.put(b"\x01")
        return read_chunk(self.vault, self.chunks[-self.claimed], self.reparse)

    def receive(self) -> ReadChunk | None:
        """The worker's next chunk, or None (its end, or a chunk this process parsed already);
        `finished` once all its chunks are in. Once the worker failed, the next chunk it left,
        parsed here."""
        if self.failure is None:
            try:
                frame = self._frames.get_nowait()  # `_arrived` said there is one
                if isinstance(frame, Exception):
                    raise frame
                got: tuple[int, ReadChunk] | None = pickle.loads(frame)
            except (EOFError, OSError, pickle.UnpicklingError) as exc:
                self.failure = f"{type(exc).__name__}: {exc}"
            else:
                if got is None:
                    self.finished = True
                    return None
                index, chunk = got
                self.next_index = index + 1
                return chunk if index < len(self.chunks) - self.claimed else None
        return self._parse_left_here()

    def _parse_left_here(self) -> ReadChunk | None:
        """After a failure: the next chunk the worker did not send, parsed here."""
        if not self.reported:
            self.reported = True
            log.warning(
                "parse worker failed; parsing its notes in this process",
                error=self.failure,
                exit_code=self._end(),
            )
        if self.next_index >= len(self.chunks) - self.claimed:
            self.finished = True
            return None
        self.next_index += 1
        self.finished = self.next_index >= len(self.chunks) - self.claimed
        return read_chunk(self.vault, self.chunks[self.next_index - 1], self.reparse)

    def close(self) -> None:
        if self.process is None:
            return
        self._outbox.put(None)
        if self.process.poll() is None:
            self.process.kill()  # the pass was abandoned midway (a failed write, Ctrl-C)
        self.process.wait()
        if self._feeder.is_alive():
            self._feeder.join()  # a write it was blocked in failed when the worker went
        while self._reader.is_alive():  # it may wait for room in `_frames`: make some
            self._drop_frames()
            self._reader.join(timeout=0.05)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()

    def _drop_frames(self) -> None:
        try:
            while True:
                self._frames.get_nowait()
        except queue.Empty:
            pass

    def _read(self) -> None:
        """The reading thread: each frame as it comes, then the error that ended the stream
        (EOFError at its end), each announced on `arrivals`."""
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout.fileno()
        while True:
            try:
                frame: bytes | Exception = read_frame(stream)
            except (EOFError, OSError) as exc:
                frame = exc
            self._frames.put(frame)
            self._arrivals.put(self)
            if isinstance(frame, Exception):
                return

    def _feed(self) -> None:
        """The feeding thread: the request, then a byte per claim, in order. A worker that
        stops reading has died, which its stdout tells `receive`."""
        assert self.process is not None and self.process.stdin is not None
        stdin = self.process.stdin
        while (data := self._outbox.get()) is not None:
            view = memoryview(data)
            try:
                while view:  # a raw pipe may take part of it (a signal midway)
                    view = view[stdin.write(view) or 0 :]
            except OSError:
                return

    def _end(self) -> int | None:
        """The exit code of a worker that broke its stream (killed if it has not exited)."""
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def end_with_parent() -> None:
    """On Linux, have the kernel end this worker when its parent dies: a `weaver index`
    killed with -9 left its workers parsing for seconds, until their pipe broke."""
    if not sys.platform.startswith("linux"):
        return
    parent = int(os.environ.get(PARENT_ENV, "0") or 0)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if parent and os.getppid() != parent:  # it died before the request was made
        os._exit(0)


# From <linux/prctl.h>.
PR_SET_PDEATHSIG = 1
# The parent's pid, as the parent saw it (the worker's own getppid() may be too late).
PARENT_ENV = "WEAVER_INDEX_PARENT"


def start_child(code: str) -> subprocess.Popen[bytes]:
    """`code` run by this Python in a child process that imports this very `weaver`, installed
    or not, and knows its parent (`PARENT_ENV`), its stdin and stdout pipes to this one.
    Raises OSError where no child can start (an embedded Python, out of processes)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_PARENT, env.get("PYTHONPATH")]))
    env[PARENT_ENV] = str(os.getpid())
    return subprocess.Popen(
        # -P: no current folder ahead of PYTHONPATH, where another checkout's `weaver` would
        # be imported instead of this one, and send records of another shape.
        [sys.executable, "-P", "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        bufsize=0,
    )


def serve_worker() -> None:
    """The worker process: one request on stdin, then a frame per chunk (with its index) and
    a last one of None; it stops early where the chunks this process's parent claimed begin.

    It ends as soon as its parent is gone, wherever the kernel does not see to it
    (`end_with_parent`): its stdin ends before the work does, or its stdout breaks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which ends us
    end_with_parent()
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not corrupt the stream
    stdin = sys.stdin.fileno()
    vault, chunks, reparse = pickle.loads(read_frame(stdin))
    claims = _Claims(stdin)
    ready: queue.Queue[bytes | None] = queue.Queue(maxsize=AHEAD)
    sender = threading.Thread(target=_send, args=(ready, out), daemon=True)
    sender.start()
    for index, chunk in enumerate(chunks):
        if index >= len(chunks) - claims.count:
            break
        parsed = (index, read_chunk(vault, chunk, reparse))
        ready.put(pack_frame(pickle.dumps(parsed, pickle.HIGHEST_PROTOCOL)))
    ready.put(pack_frame(pickle.dumps(None)))
    ready.put(None)
    sender.join()


class _Claims:
    """The chunks the parent claimed so far: a byte each on stdin, counted by a thread (a pipe
    cannot be read without blocking on Windows). The parent keeps stdin open until the
    worker has exited, so its end means the parent is gone: the worker ends at once."""

    def __init__(self, fd: int) -> None:
        self.count = 0
        self._fd = fd
        threading.Thread(target=self._count, daemon=True).start()

    def _count(self) -> None:
        try:
            while data := os.read(self._fd, 65536):
                self.count += len(data)
        except OSError:
            pass
        os._exit(0)


def _send(ready: queue.Queue[bytes | None], out: IO[bytes]) -> None:
    """Feed the pipe while the main thread parses: it blocks only when the parent is busy."""
    try:
        while (data := ready.get()) is not None:
            out.write(data)
            out.flush()
        out.close()
    except OSError:  # the parent went away (a broken pipe): nobody is left to parse for
        os._exit(0)


def pack_frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(8, "big") + payload


def read_frame(fd: int) -> bytes:
    """One frame's payload from a raw file descriptor."""
    size = int.from_bytes(_read_exactly(fd, 8), "big")
    return _read_exactly(fd, size)


def _read_exactly(fd: int, size: int) -> bytes:
    parts = []
    while size:
        part = os.read(fd, min(size, 1 << 20))
        if not part:
            raise EOFError("the stream ended midway")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def read_chunk(vault: Vault, work: Sequence[Work], reparse: bool) -> ReadChunk:
    """Read and parse; a note whose bytes hash as before is only touched, unless `reparse`
    (`weaver index --full`, e.g. after an upgrade that parses differently)."""
    result = ReadChunk()
    for file_stat, previous in work:
        if file_stat.size > MAX_NOTE_BYTES:
            result.records.append(_too_large(file_stat, previous, file_stat.size))
            continue
        read_error: str | None = None
        try:
            data = vault.read_bytes(file_stat.path)  # read(n) would allocate all n bytes up front
        except FileNotFoundError:
            result.vanished.append(file_stat.path)
            continue
        except OSError as exc:
            data, read_error = b"", f"cannot read file: {exc.strerror or exc}"
        if len(data) > MAX_NOTE_BYTES:  # it grew after the walk saw it
            result.records.append(_too_large(file_stat, previous, len(data)))
            continue
        digest = hashlib.sha256(data).hexdigest()
        if previous is not None and previous.content_hash == digest and read_error is None:
            result.unchanged += 1
            if not reparse:
                result.touched.append(file_stat)  # touched, not edited: no need to parse again
                continue
        result.records.append(build_record(file_stat, data, digest, previous, read_error))
    return result


def _too_large(file_stat: FileStat, previous: StoredFile | None, size: int) -> NoteRecord:
    """A note too big to read: listed under its name, with an error saying why it is empty.
    No content hash, so it is never taken for a move of another note."""
    error = f"too large to index: {too_large(size, MAX_NOTE_BYTES)}"
    return build_record(file_stat, b"", "", previous, error)


def build_record(
    file_stat: FileStat,
    data: bytes,
    digest: str,
    previous: StoredFile | None,
    read_error: str | None = None,
) -> NoteRecord:
    """What the cache stores of one note's or canvas's bytes; never raises on content."""
    if is_canvas_path(file_stat.path):
        return _canvas_record(file_stat, data, digest, previous, read_error)
    return _note_record(file_stat, data, digest, previous, read_error)


def _note_record(
    file_stat: FileStat,
    data: bytes,
    digest: str,
    previous: StoredFile | None,
    read_error: str | None = None,
) -> NoteRecord:
    """Decode and parse one note's bytes into what the cache stores; never raises on content."""
    text, decode_error = decode_note(data)
    parsed = parse_note(file_stat.path, text)
    return NoteRecord(
        path=file_stat.path,
        title=parsed.title,
        frontmatter=parsed.frontmatter,
        type=parsed.type,
        status=parsed.status,
        aliases=parsed.aliases,
        tags=parsed.tags,
        links=parsed.links,
        **_file_fields(file_stat, digest, previous),
        word_count=parsed.word_count,
        tasks_open=parsed.tasks_open,
        tasks_done=parsed.tasks_done,
        error=read_error or decode_error or parsed.error,
        body=parsed.body,
        heading=parsed.heading,
        headings="\n".join(h.text for h in parsed.headings),
        front=text[: len(text) - len(parsed.body)],
        search_body=segment(parsed.body),
        tasks=tuple(map(task_row, parsed.tasks)),
        inline_fields=parsed.inline_fields,
    )


def _file_fields(file_stat: FileStat, digest: str, previous: StoredFile | None) -> dict[str, Any]:
    """What a note's and a canvas's rows take alike from the file itself."""
    return {
        "size": file_stat.size,
        "created": _created_ms(file_stat, previous),
        "modified": file_stat.mtime_ns // 1_000_000,
        "mtime_ns": file_stat.mtime_ns,
        "content_hash": digest,
        "indexed_at": time.time_ns() // 1_000_000,
    }


def _canvas_record(
    file_stat: FileStat,
    data: bytes,
    digest: str,
    previous: StoredFile | None,
    read_error: str | None,
) -> NoteRecord:
    """A canvas as a row beside the notes: its cards' links, tags and text (see
    `weaver.canvas.contents`); no frontmatter, aliases or tasks, which a canvas cannot hold."""
    contents = read_contents(file_stat.path, data) if data else CanvasContents()
    return NoteRecord(
        path=file_stat.path,
        title=PurePosixPath(file_stat.path).stem,
        frontmatter={},
        type=None,
        status=None,
        aliases=(),
        tags=contents.tags,
        links=contents.links,
        **_file_fields(file_stat, digest, previous),
        word_count=contents.word_count,
        tasks_open=0,
        tasks_done=0,
        error=read_error or contents.error,
        body=contents.body,
        heading=None,
        headings="\n".join(h.text for h in contents.headings),
        search_body=segment(contents.body),
    )


def _created_ms(file_stat: FileStat, previous: StoredFile | None) -> int:
    """An edited file keeps the creation time first seen: editors' atomic saves reset ctime."""
    if previous is not None and previous.created is not None:
        return previous.created
    return file_stat.created_ns // 1_000_000
