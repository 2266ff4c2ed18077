"""Reading and parsing the notes of an indexing pass, on every core when the pass is big.

Parsing (YAML, links, tags) is about half of a first index and the SQLite writes are the rest.
Both hold the GIL, so threads cannot overlap them; processes can. A big pass (a first index,
`weaver index --full`, a large checkout) therefore hands its notes to parse workers and writes
what they send back while they parse on; a small pass, the watcher's usual case, parses here.

A worker is a plain `python -c` child, not a `multiprocessing` one: spawn-mode multiprocessing
re-runs the parent's `__main__` in every child (the whole CLI, or a user's unguarded script),
and fork-mode copies the locks of the daemon's other threads in whatever state they are in.
The worker gets its share of the files on stdin, parses them in chunks and sends each back as a
pickle on stdout. It keeps up to `AHEAD` chunks ready beside the pipe, so it parses on while
the indexer is busy writing, without piling a whole vault of parsed notes up in memory.

Should a worker fail to start or die, the indexer parses its remaining chunks itself: slower,
and nothing lost. An error inside the parser is raised here as it would be without workers.
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

import structlog

from weaver.errors import too_large
from weaver.parser import ParsedLink, decode_note, parse_note
from weaver.vault import MAX_NOTE_BYTES, FileStat, Vault

log = structlog.get_logger(__name__)

# Notes per chunk: big enough that pickling and the pipe are noise, small enough that the
# first chunk is back soon after the worker starts.
CHUNK = 250
# Parsed chunks a worker holds ready while the indexer writes: about one write batch.
AHEAD = 8
# Below this many notes to read, a worker costs more to start (~0.3 s) than it saves.
PARALLEL_MIN = 2000
# More workers than this only wait for the single writer.
MAX_WORKERS = 4
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)
_WORKER_CODE = "from weaver.reading import serve_worker; serve_worker()"


@dataclass(frozen=True, slots=True)
class StoredFile:
    """What the cache remembers about a file, enough to tell whether it changed on disk."""

    path: str
    size: int
    mtime_ns: int
    content_hash: str | None  # None for attachments
    created: int | None


class NoteRecord(NamedTuple):
    """One parsed note, ready to be written. A named tuple (as `ParsedLink`) because records
    come back from parse workers pickled, and tuples unpickle several times faster."""

    path: str
    title: str
    frontmatter: dict[str, Any]
    type: str | None
    status: str | None
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    links: tuple[ParsedLink, ...]
    size: int
    created: int
    modified: int
    mtime_ns: int
    content_hash: str
    indexed_at: int
    word_count: int
    tasks_open: int
    tasks_done: int
    error: str | None
    body: str  # the text after the frontmatter, for full-text search


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
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cpus = os.cpu_count() or 1
    return max(0, min(cpus - 1, MAX_WORKERS))


def read_notes(
    vault: Vault,
    work: Sequence[Work],
    reparse: bool,
    workers: int,
) -> Iterator[ReadChunk]:
    """Read and parse `work` in chunks, yielded as they are ready (not in order)."""
    chunks = [work[start : start + CHUNK] for start in range(0, len(work), CHUNK)]
    if workers < 1 or len(work) < PARALLEL_MIN:
        for files in chunks:
            yield read_chunk(vault, files, reparse)
        return
    count = min(workers, len(chunks))
    started = [ParseWorker(vault, chunks[i::count], reparse) for i in range(count)]
    try:
        for worker in started:  # after every start: they import (~0.2 s) side by side
            worker.send()
        streams = [worker.results() for worker in started]
        while streams:  # round-robin: the workers run at the same pace
            for stream in list(streams):
                chunk = next(stream, None)
                if chunk is None:
                    streams.remove(stream)
                else:
                    yield chunk
    finally:
        for worker in started:
            worker.close()


class ParseWorker:
    """One worker process and the chunks it was given (parsed here if it cannot finish)."""

    def __init__(self, vault: Vault, chunks: Sequence[Sequence[Work]], reparse: bool) -> None:
        self.vault, self.chunks, self.reparse = vault, chunks, reparse
        self.failure: str | None = None
        self.process: subprocess.Popen[bytes] | None = None
        env = dict(os.environ)  # find this very `weaver`, installed or not
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_PARENT, env.get("PYTHONPATH")]))
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        except OSError as exc:  # no interpreter to run (embedded Python), out of processes
            self.failure = f"cannot start: {exc}"

    def send(self) -> None:
        if self.process is None:
            return
        stdin = self.process.stdin
        assert stdin is not None
        request = (self.vault, self.chunks, self.reparse)
        try:
            with stdin:
                pickle.dump(request, stdin, protocol=pickle.HIGHEST_PROTOCOL)
        except OSError as exc:  # it died before reading: an interpreter that cannot start
            self.failure = f"cannot send work: {exc}"

    def results(self) -> Iterator[ReadChunk]:
        """The chunks as the worker sends them; the rest, parsed here, if it stops early."""
        received = 0
        if self.process is not None and self.failure is None:
            stdout = self.process.stdout
            assert stdout is not None
            try:
                while received < len(self.chunks):
                    chunk: ReadChunk = pickle.load(stdout)
                    received += 1
                    yield chunk
            except (EOFError, OSError, pickle.UnpicklingError) as exc:
                self.failure = f"{type(exc).__name__}: {exc}"
        if received < len(self.chunks):
            log.warning(
                "parse worker failed; parsing its notes in this process",
                error=self.failure,
                exit_code=self._end(),
            )
            for files in self.chunks[received:]:
                yield read_chunk(self.vault, files, self.reparse)

    def close(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()  # the pass was abandoned midway (a failed write, Ctrl-C)
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def _end(self) -> int | None:
        """The exit code of a worker that broke its stream (killed if it has not exited)."""
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def serve_worker() -> None:
    """The worker process: one request on stdin, then a pickled `ReadChunk` per chunk."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which ends us
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # the parent went away: end quietly
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not corrupt the stream
    vault, chunks, reparse = pickle.load(sys.stdin.buffer)
    ready: queue.Queue[bytes | None] = queue.Queue(maxsize=AHEAD)
    sender = threading.Thread(target=_send, args=(ready, out), daemon=True)
    sender.start()
    for chunk in chunks:
        ready.put(pickle.dumps(read_chunk(vault, chunk, reparse), pickle.HIGHEST_PROTOCOL))
    ready.put(None)
    sender.join()


def _send(ready: queue.Queue[bytes | None], out: IO[bytes]) -> None:
    """Feed the pipe while the main thread parses: it blocks only when the parent is busy."""
    while (data := ready.get()) is not None:
        out.write(data)
        out.flush()
    out.close()


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
    """Decode and parse one note's bytes into what the cache stores; never raises on content."""
    text, decode_error = decode_note(data)
    parsed = parse_note(file_stat.path, text)
    # An edited note keeps the creation time first seen: editors' atomic saves reset ctime.
    if previous is not None and previous.created is not None:
        created_ms = previous.created
    else:
        created_ms = file_stat.created_ns // 1_000_000
    return NoteRecord(
        path=file_stat.path,
        title=parsed.title,
        frontmatter=parsed.frontmatter,
        type=parsed.type,
        status=parsed.status,
        aliases=parsed.aliases,
        tags=parsed.tags,
        links=parsed.links,
        size=file_stat.size,
        created=created_ms,
        modified=file_stat.mtime_ns // 1_000_000,
        mtime_ns=file_stat.mtime_ns,
        content_hash=digest,
        indexed_at=time.time_ns() // 1_000_000,
        word_count=parsed.word_count,
        tasks_open=parsed.tasks_open,
        tasks_done=parsed.tasks_done,
        error=read_error or decode_error or parsed.error,
        body=parsed.body,
    )
