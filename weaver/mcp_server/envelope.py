"""Tool results as envelopes, and the tool class that guarantees every answer is one.

Success: `{success: true, data, metadata: {executionTime, cacheHit}}`; failure: `{success:
false, error, metadata}` with the MCP `isError` flag. Both travel as structured content and as
the same JSON in a text block, except an answer over `ANSWER_TOKEN_BOUND` estimated tokens in a
session with structured content (protocol 2025-06-18 on): its text block says so and how to ask
for less (`text_for_window`).

Errors are translated here and only here: a `WeaverError` becomes its own message (with the note
a wrong path probably meant: `hints`), a database failure "Database error", an unreadable file
"Cannot read file", arguments that fail validation or that the tool does not take "Invalid
arguments: <argument>: <reason>", anything unexpected "Internal error" (logged), always as an
envelope. A call over its client's rate limit (`runtime.rate_limits`, checked by the catalog)
is refused with `retryAfterSeconds` beside `error`. Why: docs/architecture.md,
"mcp_server/envelope.py".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, TypeVar

import anyio.to_thread
import pydantic_core
import structlog
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from weaver.cache.db import deadline_passed, query_deadline
from weaver.cache.recovery import is_corruption
from weaver.edits.gate import WriteCancelledError, WriteGate, gated
from weaver.errors import CallTimeoutError, InvalidPathError, NoteNotFoundError, WeaverError
from weaver.mcp_server.hints import with_hint
from weaver.mcp_server.schemas import Metadata, lean_schema
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens
from weaver.runtime.rate_limits import RateLimited
from weaver.runtime.state import ServerState

log = structlog.get_logger(__name__)

# The first protocol version with `structuredContent` (before it, the text block is the answer).
STRUCTURED_CONTENT_SINCE = "2025-06-18"

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def _metadata(started: float, cache_hit: bool, warnings: list[str] | None = None) -> dict[str, Any]:
    elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
    return Metadata(execution_time=elapsed_ms, cache_hit=cache_hit, warnings=warnings).to_wire()


def _result(envelope: dict[str, Any]) -> CallToolResult:
    # Compact and UTF-8, as json.dumps(ensure_ascii=False) would write it, in a third the time.
    text = pydantic_core.to_json(envelope).decode()
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=envelope,
        is_error=not envelope["success"],
    )


def envelope_result(envelope: dict[str, Any]) -> CallToolResult:
    """A tool's result carrying this envelope (one built, or changed, outside `answer`)."""
    return _result(envelope)


# What a tool's work returns: its result model, or the model's wire form built directly (for
# answers of thousands of items, where a model per item costs more than the answer's encoding).
Data = BaseModel | dict[str, Any]


def ok(
    data: Data, started: float, cache_hit: bool, warnings: list[str] | None = None
) -> CallToolResult:
    payload = data if isinstance(data, dict) else data.model_dump(mode="json", by_alias=True)
    metadata = _metadata(started, cache_hit, warnings or None)
    return _result({"success": True, "data": payload, "metadata": metadata})


def fail(message: str, started: float, cache_hit: bool) -> CallToolResult:
    return _result({"success": False, "error": message, "metadata": _metadata(started, cache_hit)})


def rate_limited(refusal: RateLimited, cache_hit: bool) -> CallToolResult:
    """A call over its client's rate limit: the error names the limit and says when to retry,
    in its text and as `retryAfterSeconds` (rounded up: a retry then succeeds)."""
    envelope = {
        "success": False,
        "error": refusal.message,
        "retryAfterSeconds": math.ceil(refusal.retry_after_s),
        "metadata": _metadata(time.perf_counter(), cache_hit),
    }
    return _result(envelope)


def text_for_window(result: CallToolResult, tool: str, protocol: str | None) -> CallToolResult:
    """`result` with a short text block instead of its JSON when that JSON is more than a
    context window holds and the session's protocol carries the structured copy.

    The MCP spec asks a tool with structured content to put the same JSON in a text block "for
    backwards compatibility" (SHOULD, not MUST). For an answer of hundreds of kilobytes that
    copy doubles what is encoded, sent and parsed, and no model can read it: a client that
    shows the model the text (Claude Code refuses answers over 25,000 tokens) is better told
    how to ask for less. Clients of older protocols, which have only the text, keep it."""
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    if protocol is None or protocol < STRUCTURED_CONTENT_SINCE or len(text) <= ANSWER_TOKEN_BOUND:
        return result  # at most a character per token below the bound: never over it
    tokens = estimate_tokens(text)
    if tokens <= ANSWER_TOKEN_BOUND:
        return result
    size = len(text.encode()) / 1024
    note = (
        f"{tool} answered {size:,.0f} KiB of JSON (about {tokens:,} tokens), more than a context "
        "window holds: the whole answer is in this result's structured content only. To have "
        "it as text, ask for less: a smaller `limit`, a `directory`, or a page at a time with "
        "`offset`."
    )
    return result.model_copy(update={"content": [TextContent(type="text", text=note)]})


def describe_invalid_arguments(exc: ValidationError) -> str:
    """`Invalid arguments: limit: Input should be a valid integer; path: Field required`."""
    parts = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "Invalid arguments: " + "; ".join(parts)


def database_error(exc: SQLAlchemyError) -> str:
    """What a client is told of a failed cache query: the kind, and for the faults a person
    can act on (a full disk, a corrupt cache) what they are."""
    message = str(getattr(exc, "orig", None) or exc).partition("\n")[0]
    if is_corruption(exc):
        return (
            "Database error: the cache is corrupt; restart the daemon (or run `weaver index`) "
            "to move it aside and rebuild it from the notes"
        )
    if "disk is full" in message or "readonly" in message or "unable to open" in message:
        return f"Database error: {message}"
    return f"Database error: {type(exc).__name__}"


class ArgumentError(Exception):
    """An argument the schema accepts but the tool cannot use (an empty tag): an edge-only error,
    answered as `Invalid arguments: <argument>: <reason>`."""

    def __init__(self, argument: str, reason: str) -> None:
        super().__init__(f"Invalid arguments: {argument}: {reason}")


T = TypeVar("T")

# `answer`'s default deadline: the server's `tool_timeout_s`.
SETTINGS_DEADLINE = -1.0


async def answer(
    state: ServerState,
    work: Callable[[], Data],
    *,
    cache_hit: bool = True,
    wait_ready: bool = True,
    deadline: float | None = SETTINGS_DEADLINE,
    writes: bool = False,
) -> CallToolResult:
    """Run `work` in a worker thread (after the initial reconcile) and wrap what it returns.

    After `deadline` seconds (`tool_timeout_s` by default; None for none) the call answers a
    timeout error and stops waiting: the event loop is never held by a call, and the thread's
    cache queries are interrupted by SQLite (`cache.db.query_deadline`) so it ends soon too.
    A call that `writes` is never abandoned once its write has begun (`weaver.edits.gate`):
    past the deadline it is stopped if it has not, else waited for and answered as it ended."""
    started = time.perf_counter()
    seconds = state.app.settings.tool_timeout_s if deadline == SETTINGS_DEADLINE else deadline
    if wait_ready:
        await state.wait_ready()
    # The short switch interval from here: not while waiting for the first index, which it
    # would only slow down.
    with state.quick_switch.serving() if state.quick_switch else nullcontext():
        return await _answer(state, work, started, seconds, cache_hit, writes)


async def _answer(
    state: ServerState,
    work: Callable[[], Data],
    started: float,
    seconds: float | None,
    cache_hit: bool,
    writes: bool,
) -> CallToolResult:
    warnings: list[str] = []
    try:
        if writes:
            data, warnings = await _run_write(work, seconds)
        else:
            data = await run_read(state, work, seconds, cache_hit)
    except TimeoutError:
        log.warning("tool call timed out", seconds=seconds)
        return fail(str(CallTimeoutError(seconds or 0.0)), started, cache_hit)
    except (NoteNotFoundError, InvalidPathError) as exc:
        message = await anyio.to_thread.run_sync(with_hint, state, exc)
        return fail(message, started, cache_hit)
    except (WeaverError, ArgumentError) as exc:
        return fail(str(exc), started, cache_hit)
    except SQLAlchemyError as exc:
        log.exception("cache query failed")
        return fail(database_error(exc), started, cache_hit)
    except OSError as exc:  # the message would carry an absolute path: keep only the reason
        return fail(f"Cannot read file: {exc.strerror or type(exc).__name__}", started, cache_hit)
    except Exception as exc:  # still an envelope, with the details left in the server's log
        log.exception("tool failed")
        return fail(f"Internal error: {type(exc).__name__}", started, cache_hit)
    return ok(data, started, cache_hit, warnings)


def _bounded(work: Callable[[], T], seconds: float | None) -> Callable[[], T]:
    def run() -> T:
        with query_deadline(seconds):
            try:
                return work()
            except OperationalError:
                if deadline_passed():
                    raise CallTimeoutError(seconds or 0.0) from None
                raise

    return run


async def run_read(
    state: ServerState, work: Callable[[], T], seconds: float | None, cache_hit: bool
) -> T:
    """`work` in a worker thread (a read one when `cache_hit`), given up after `seconds`."""
    with anyio.fail_after(seconds):
        return await anyio.to_thread.run_sync(
            _bounded(work, seconds),
            abandon_on_cancel=True,
            limiter=state.read_threads() if cache_hit else None,
        )


async def _run_write(work: Callable[[], Data], seconds: float | None) -> tuple[Data, list[str]]:
    """`work` under a write gate: stopped at the deadline only if its write has not begun."""
    write_gate = WriteGate(seconds or 0.0)
    outcome: dict[str, Any] = {}
    ended = anyio.Event()
    bounded = _bounded(work, seconds)

    def in_gate() -> Data:
        with gated(write_gate):
            return bounded()

    async def run() -> None:
        try:
            outcome["data"] = await anyio.to_thread.run_sync(in_gate, abandon_on_cancel=True)
        except Exception as exc:  # handed to the caller below, translated by `answer`
            outcome["error"] = exc
        finally:
            ended.set()

    late = cancelled = False
    async with anyio.create_task_group() as group:
        group.start_soon(run)
        with anyio.move_on_after(seconds):
            await ended.wait()
        if not ended.is_set():
            cancelled = write_gate.cancel()
            if cancelled:
                group.cancel_scope.cancel()
            else:
                late = True
                log.warning("write past its deadline: finishing it", seconds=seconds)
                await ended.wait()
    if cancelled:
        raise WriteCancelledError(seconds or 0.0)
    if "error" in outcome:
        raise outcome["error"]
    warnings = list(write_gate.warnings)
    if late:
        warnings.append(
            f"the call took longer than its {seconds:g} s deadline; its write had begun, so "
            "it was finished rather than abandoned: the answer is what it did"
        )
    return outcome["data"], warnings


class EnvelopeTool(Tool):
    """A tool whose argument errors are envelopes too, and whose calls are counted."""

    on_call: Callable[[], None] | None = Field(default=None, exclude=True)
    # Whether the caller may make the call now (its rate limit): None, or the refusal.
    admit: Callable[[], CallToolResult | None] | None = Field(default=None, exclude=True)
    cache_hit: bool = Field(default=True, exclude=True)
    # The output schema with its descriptions, for the tool's help (`tool_help`).
    result_schema: dict[str, Any] | None = Field(default=None, exclude=True)

    async def run(
        self,
        arguments: dict[str, Any],
        context: Context[Any, Any],
        convert_result: bool = False,
    ) -> Any:
        if self.on_call is not None:
            self.on_call()
        started = time.perf_counter()
        unknown = sorted(arguments.keys() - self.parameters.get("properties", {}).keys())
        if unknown:
            return fail(self.describe_unknown_arguments(unknown), started, self.cache_hit)
        # Before the SDK resolves anything: a confirmation's dry run costs what the call does.
        # A round answering the call's question (2026-07-28: `requestState` echoed, sealed by
        # the SDK) continues a call already admitted, and is not charged again.
        continues = context is not None and context.request_state is not None
        refused = self.admit() if self.admit is not None and not continues else None
        if refused is not None:
            return refused
        try:
            result = await super().run(arguments, context, convert_result=False)
        except ToolError as exc:
            # The SDK raises a plain ToolError (from pydantic's error) for arguments that fail
            # validation; a tool body's own failure is an envelope already (`answer`), or an
            # UnexpectedToolError, which is no fault of the arguments.
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                return fail(describe_invalid_arguments(cause), started, self.cache_hit)
            raise
        if isinstance(result, CallToolResult):
            # Every tool answers a finished envelope. The SDK's conversion would only check its
            # structured content against the output model again (pydantic, a model per item,
            # slow on a big graph), a check clients make themselves against the same schema, as
            # the tests' client does for every tool.
            protocol = context.protocol_version if context is not None else None
            return text_for_window(result, self.name, protocol)
        return self.fn_metadata.convert_result(result) if convert_result else result

    def describe_unknown_arguments(self, unknown: list[str]) -> str:
        """`Invalid arguments: hasErrors: not an argument of query_files (it takes ...)`."""
        known = ", ".join(self.parameters.get("properties", {})) or "no arguments"
        names = ", ".join(unknown)
        noun = "an argument" if len(unknown) == 1 else "arguments"
        return f"Invalid arguments: {names}: not {noun} of {self.name} (it takes {known})"


def lean_parameters(tool: Tool) -> None:
    """The tool's input schema as listed: lean (`schemas.lean_schema`, descriptions kept: they
    say what to send), and closed."""
    tool.parameters = lean_schema(tool.parameters)
    # An argument the tool does not take is refused (`run`), not silently ignored: a filter
    # misspelt by the model would otherwise answer as if it had been applied.
    tool.parameters["additionalProperties"] = False


def unwrap(text: str) -> str:
    """Source-wrapped prose as the model should read it: one line per paragraph."""
    paragraphs = text.strip().split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def make_tool(
    fn: Callable[..., Any],
    state: ServerState,
    *,
    title: str,
    description: str,
    cache_hit: bool = True,
    annotations: ToolAnnotations | None = None,
) -> EnvelopeTool:
    """Register `fn` (named as the tool) with its description, hints (read-only unless
    `annotations` says otherwise) and counter."""
    tool = EnvelopeTool.from_function(
        fn,
        title=title,
        description=unwrap(description),
        annotations=annotations or READ_ONLY.model_copy(update={"title": title}),
    )
    assert isinstance(tool, EnvelopeTool)  # from_function builds `cls`
    if tool.fn_metadata.output_schema is not None:
        output = tool.fn_metadata.output_schema
        tool.fn_metadata.output_schema = lean_schema(output, descriptions=False)
        tool.result_schema = lean_schema(output)
    lean_parameters(tool)
    tool.on_call = state.count_request
    tool.cache_hit = cache_hit
    return tool
