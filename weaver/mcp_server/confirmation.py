"""Destructive calls confirmed by the person: a tool declared with `confirm=` asks first.

Before the tool's work runs, its question function makes a dry run of the call (the notes a
deletion leaves with broken links, the links a move rewrites, the lines a tag rename changes,
the notes a tag removal edits) and words what would change, or answers None when nothing needs
confirming (a move touching few notes, a dry run, a call that will fail anyway). Then:

- a client that declared elicitation is asked, with that message and a yes/no form; "no",
  or a dismissed question, answers that the user declined and changes nothing;
- a client that cannot be asked is answered by the `confirm_destructive` setting: "allow"
  runs the call as today, "refuse" answers an error naming why and how to allow it.

The asking goes through the SDK's resolvers (`Resolve`), which speak both protocols: a
standalone `elicitation/create` request mid-call up to 2025-11-25, an `input_required` result
that the client answers by calling again from 2026-07-28. On the second round the dry run is
made again; the answer counts only if its message is the one the person saw, so a vault that
changed meanwhile is asked about again rather than changed unseen.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve, build_resolver_plans
from mcp.server.mcpserver.tools import Tool
from mcp_types import ClientCapabilities
from pydantic import BaseModel, Field
from sqlalchemy.exc import SQLAlchemyError

from weaver.errors import CallTimeoutError, WeaverError
from weaver.mcp_server.envelope import run_read
from weaver.runtime.state import ServerState

log = structlog.get_logger(__name__)

# A dry run wording what a call would change (the tool's arguments by wire name), or None
# when the call needs no confirmation.
Question = Callable[[ServerState, Mapping[str, Any]], str | None]

# The keyword the outcome reaches the bound tool under: no argument can be named so.
CONFIRMATION = "_confirmation"


class Confirm(BaseModel):
    """The form the person answers: one yes/no."""

    confirm: bool = Field(title="Go ahead?", description="Yes: make the change described")


@dataclass(frozen=True, slots=True)
class Proceed:
    """No one needs to be asked: nothing to confirm, or the setting allows the call."""


@dataclass(frozen=True, slots=True)
class Refused:
    """The call is not made; `reason` is the answer's error."""

    reason: str


def install_confirmation(tool: Tool, state: ServerState, question: Question) -> None:
    """Make `tool` settle its confirmation before it runs: the SDK resolves the tool's
    `CONFIRMATION` parameter (asking the client if need be) and passes the outcome in."""
    fields = tool.fn_metadata.arg_model.model_fields
    names = [field.alias or name for name, field in fields.items()]
    resolver = _resolver(tool.name, state, question, names)
    tool.resolved_params = {CONFIRMATION: (Resolve(resolver), True)}
    tool.resolver_plans = build_resolver_plans(tool.resolved_params, set(names))


def refusal(tool: str, outcome: ElicitationResult[Any]) -> str | None:
    """Why the call must not go ahead, or None when it may."""
    if isinstance(outcome, AcceptedElicitation):
        match outcome.data:
            case Proceed():
                return None
            case Refused(reason=reason):
                return reason
            case Confirm(confirm=True):
                return None
        return f"Declined by the user: they answered no to the {tool} call; nothing was changed"
    if outcome.action == "decline":
        return f"Declined by the user: they said no to the {tool} call; nothing was changed"
    return (
        f"Declined by the user: they dismissed the confirmation of the {tool} call without "
        "answering; nothing was changed"
    )


def _resolver(
    tool: str, state: ServerState, question: Question, names: list[str]
) -> Callable[..., Awaitable[object]]:
    """The tool's resolver, taking the context and the tool's arguments by name, as the SDK's
    resolver plan reads a signature (which here depends on the tool, so it is built)."""

    async def settle(**given: Any) -> object:
        context = given.pop("ctx")
        return await _settle(tool, state, question, given, context)

    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    parameters += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names]
    settle.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    settle.__annotations__ = {"ctx": Context}
    # The SDK keys the question on the wire (`input_requests`, `request_state`) by the
    # resolver's qualified name: one per tool, the same in every process.
    settle.__qualname__ = f"confirm_{tool}"
    return settle


async def _settle(
    tool: str,
    state: ServerState,
    question: Question,
    arguments: Mapping[str, Any],
    context: Context[Any, Any],
) -> object:
    asking = can_elicit(context.client_capabilities)
    if not asking and state.app.settings.confirm_destructive == "allow":
        return Proceed()  # as before confirmations existed: no dry run to pay for
    message = await _dry_run(state, question, arguments)
    if isinstance(message, Refused) or message is None:
        return message or Proceed()
    if asking:
        return Elicit(message, Confirm)
    log.info("destructive call refused: the client cannot confirm it", tool=tool)
    return Refused(
        f"Refused: {tool} needs the user's confirmation here and this client cannot ask "
        "for it (it does not support MCP elicitation), so the server's setting "
        'confirm_destructive = "refuse" applies; nothing was changed. What it would do: '
        f"{message} To allow such calls without asking, set confirm_destructive = "
        '"allow" in the config (or WEAVER_CONFIRM_DESTRUCTIVE=allow), or use a client '
        "that supports elicitation."
    )


async def _dry_run(
    state: ServerState, question: Question, arguments: Mapping[str, Any]
) -> str | Refused | None:
    """The question's message, made in a worker thread under the call's deadline. A call the
    dry run finds wrong (a missing note, a bad path) needs no confirmation: the tool itself
    then answers its error, with its hints."""
    await state.wait_ready()
    seconds = state.app.settings.tool_timeout_s
    try:
        return await run_read(state, lambda: question(state, arguments), seconds, False)
    except (TimeoutError, CallTimeoutError):
        # Never "no question" for a dry run cut short: the call goes ahead only once seen.
        return Refused(f"{CallTimeoutError(seconds)} (working out what the call would change)")
    except (WeaverError, OSError):
        return None
    except Exception as exc:
        log.exception("dry run for a confirmation failed")
        kind = "Database error" if isinstance(exc, SQLAlchemyError) else "Internal error"
        return Refused(f"{kind}: could not work out what the call would change")


def can_elicit(capabilities: ClientCapabilities | None) -> bool:
    """Whether the client can be asked with a form (a bare `elicitation: {}`, as before modes
    existed, counts; URL-only does not)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)
