"""The tools as module-level functions: `@tool(...)` declares one with its `ToolSpec`, and
`tools_of(state, *modules)` binds a module's tools to one server's state for the SDK.

A tool function's first parameter is supplied, never asked of the client: the server's
`ServerState` (or what the spec's `using` makes of it once per server, shared by every tool
with the same `using`). The other parameters are the tool's arguments; their annotations are
its input schema, exactly as the SDK reads a plain function's.

A plain function is the tool's work: it runs in a worker thread through `envelope.answer`
(on the write gate when the spec `writes`), and what it returns is the envelope's `data`, whose
model (its return annotation, or `output`) is the tool's output schema. An `async` function
answers for itself with a finished envelope: the few tools that need the event loop (a
workflow run's progress and cancellation, a health check that must not wait for readiness).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Annotated, Any

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel

from weaver.config import SCOPE_PREFIX, AccessScope, Toolset
from weaver.edits.attribution import Actor, acting_as
from weaver.mcp_server.caller import current_caller
from weaver.mcp_server.confirmation import (
    CONFIRMATION,
    Question,
    install_confirmation,
    refusal,
)
from weaver.mcp_server.envelope import (
    EnvelopeTool,
    answer,
    fail,
    lean_parameters,
    make_tool,
    rate_limited,
    unwrap,
)
from weaver.mcp_server.schemas import Envelope
from weaver.runtime.rate_limits import RateClass
from weaver.runtime.state import ServerState


@dataclass(frozen=True)
class ToolSpec:
    """What a tool is, apart from its arguments: how it is listed, grouped and run.

    `writes`: it may change the vault, so it is left out when the settings say `read_only`
    (unless `queues_runs`: a reader with a PostgreSQL queue records runs for the workers
    without writing notes) and, when it is a plain function, runs on the write gate.
    `cache_hit`: answered from the cache (the envelope's `cacheHit`; the shared read threads).
    `wait_ready`: waits for the initial index before it runs.
    `output`: the data model of the envelope, where the work returns something else (a
    lighter model, or the model's wire form already built).
    `arguments`: an argument model replacing the signature's, for wire names that cannot be
    Python parameters (`async`).
    `confirm`: a destructive call asks the person first (`confirmation`): this dry run words
    what the call would change, or says None when it needs no confirmation.
    `scope`: the OAuth scope a caller needs to see and call it, where it is not the one its
    kind implies (`required_scope`): `admin` for the owner's tools.
    `rate_class`: an expensive call, limited per client (`runtime.rate_limits`): checked before
    anything else of the call runs, its confirmation's dry run included.
    `help`: the tool's whole help (`weaver://help/{tool}`); its first paragraph, what the tool
    is for and when to use it, is the description tools/list carries (every client puts that
    list into the model's context on every turn: the detail waits until it is asked for).
    """

    name: str
    title: str
    help: str
    toolset: Toolset
    writes: bool = False
    destructive: bool = False
    idempotent: bool = True
    cache_hit: bool = True
    wait_ready: bool = True
    queues_runs: bool = False
    output: type[BaseModel] | None = None
    arguments: type[ArgModelBase] | None = None
    confirm: Question | None = None
    scope: AccessScope | None = None

    @property
    def required_scope(self) -> str:
        """`weaver:read` to read, `weaver:write` to change notes, `weaver:workflows` to run
        workflows (the workflow toolset's tools that write), or the spec's own `scope`."""
        if self.scope is not None:
            return SCOPE_PREFIX + self.scope
        if self.writes:
            return SCOPE_PREFIX + ("workflows" if self.toolset == "workflows" else "write")
        return SCOPE_PREFIX + "read"

    rate_class: RateClass | None = None

    @property
    def description(self) -> str:
        return unwrap(self.help.partition("\n\n")[0])

    @property
    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=self.title,
            read_only_hint=not self.writes,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )

    def offered(self, state: ServerState) -> bool:
        """Whether a server with this state lists the tool (and takes calls of it)."""
        app = state.app
        if self.toolset not in app.settings.toolsets:
            return False
        if not self.writes or not app.settings.read_only:
            return True
        return self.queues_runs and app.queue_db is not None


@dataclass(frozen=True)
class ToolDef:
    """A tool function with its spec (what `@tool` makes of the function)."""

    spec: ToolSpec
    fn: Callable[..., Any]
    using: Callable[[ServerState], object] | None = None


def tool(
    title: str,
    help: str,
    *,
    toolset: Toolset,
    writes: bool = False,
    destructive: bool = False,
    idempotent: bool = True,
    cache_hit: bool | None = None,
    wait_ready: bool = True,
    queues_runs: bool = False,
    output: type[BaseModel] | None = None,
    arguments: type[ArgModelBase] | None = None,
    confirm: Question | None = None,
    using: Callable[[ServerState], object] | None = None,
    scope: AccessScope | None = None,
    rate_class: RateClass | None = None,
) -> Callable[[Callable[..., Any]], ToolDef]:
    """Declare the function as a tool named after it; `cache_hit` defaults to not `writes`."""

    def declare(fn: Callable[..., Any]) -> ToolDef:
        spec = ToolSpec(
            name=fn.__name__,
            title=title,
            help=help,
            toolset=toolset,
            writes=writes,
            destructive=destructive,
            idempotent=idempotent,
            cache_hit=not writes if cache_hit is None else cache_hit,
            wait_ready=wait_ready,
            queues_runs=queues_runs,
            output=output,
            arguments=arguments,
            confirm=confirm,
            scope=scope,
            rate_class=rate_class,
        )
        return ToolDef(spec, fn, using)

    return declare


def defs_of(*modules: ModuleType) -> list[ToolDef]:
    """The tools the modules declare, module by module in the order given, each in the order
    of its definitions (the order tools/list answers in). A name declared twice is refused."""
    found: dict[str, ToolDef] = {}
    for module in modules:
        for value in vars(module).values():
            if not isinstance(value, ToolDef) or value.fn.__module__ != module.__name__:
                continue  # not a tool, or one imported from another module
            if value.spec.name in found:
                raise ValueError(f"two tools are named {value.spec.name!r}")
            found[value.spec.name] = value
    return list(found.values())


def tools_of(state: ServerState, *modules: ModuleType) -> list[Tool]:
    """The modules' tools this server offers, bound to its state."""
    found = defs_of(*modules)
    bound = bind_tools(state, found)
    return [bound[each.spec.name] for each in found if each.spec.offered(state)]


def bind_tools(state: ServerState, found: list[ToolDef]) -> dict[str, EnvelopeTool]:
    """Each tool bound to this server's state, by name, offered or not (its help is read
    either way)."""
    made: dict[Callable[[ServerState], object], object] = {}
    tools: dict[str, EnvelopeTool] = {}
    for each in found:
        supplied: object = state
        if each.using is not None:
            if each.using not in made:
                made[each.using] = each.using(state)
            supplied = made[each.using]
        tools[each.spec.name] = bind(each, state, supplied)
    return tools


def bind(found: ToolDef, state: ServerState, supplied: object) -> EnvelopeTool:
    spec = found.spec
    tool = make_tool(
        BoundTool(found, state, supplied),
        state,
        title=spec.title,
        description=spec.description,
        cache_hit=spec.cache_hit,
        annotations=spec.annotations,
    )
    if spec.arguments is not None:
        tool.fn_metadata.arg_model = spec.arguments
        tool.parameters = spec.arguments.model_json_schema(by_alias=True)
        lean_parameters(tool)
    if spec.confirm is not None:
        install_confirmation(tool, state, spec.confirm)
    if spec.rate_class is not None:
        tool.admit = functools.partial(admit, state, spec.rate_class, spec.cache_hit)
    return tool


def admit(state: ServerState, rate_class: RateClass, cache_hit: bool) -> CallToolResult | None:
    """None when the caller may make this call now; else the refusal naming its rate limit."""
    caller = current_caller()
    limited = state.rate_limits().take(caller.client_id, caller.kind == "local", rate_class)
    return None if limited is None else rate_limited(limited, cache_hit)


class BoundTool:
    """A tool function with its first parameter supplied: what the SDK registers.

    The SDK reads a callable's `__signature__` for the input schema and its return annotation
    for the output schema: here the function's own, less the supplied parameter, and, for a
    plain function, returning the envelope of what it returns."""

    def __init__(self, found: ToolDef, state: ServerState, supplied: object) -> None:
        self._found = found
        self._state = state
        self._supplied = supplied
        self._is_async = inspect.iscoroutinefunction(found.fn)
        signature = inspect.signature(found.fn, eval_str=True)
        parameters = list(signature.parameters.values())[1:]
        returns = signature.return_annotation
        if not self._is_async:
            returns = Annotated[CallToolResult, Envelope[found.spec.output or returns]]  # type: ignore[misc]
        self.__name__ = found.spec.name
        self.__signature__ = signature.replace(parameters=parameters, return_annotation=returns)
        self.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": returns}

    async def __call__(self, **arguments: Any) -> Any:
        """The call, its writes attributed to its caller and the tool (the audit log)."""
        spec = self._found.spec
        caller = current_caller()
        with acting_as(Actor(caller.kind, caller.client_id, caller.name, spec.name)):
            return await self._call(spec, arguments)

    async def _call(self, spec: ToolSpec, arguments: dict[str, Any]) -> Any:
        fn = self._found.fn
        if self._is_async:
            return await fn(self._supplied, **arguments)
        if CONFIRMATION in arguments:
            reason = refusal(spec.name, arguments.pop(CONFIRMATION))
            if reason is not None:
                return fail(reason, time.perf_counter(), spec.cache_hit)
        return await answer(
            self._state,
            functools.partial(fn, self._supplied, **arguments),
            cache_hit=spec.cache_hit,
            wait_ready=spec.wait_ready,
            writes=spec.writes,
        )
