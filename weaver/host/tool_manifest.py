"""The tool manifest: what `weaver serve` answers to `initialize` and `tools/list`, kept beside
the cache, so that the next start answers them before importing its tools, SQLAlchemy or the
workflow engine (`host.quick_start`, issue 39).

It is written from the real server once that is built, and read back only under the same key:
Weaver's version, the SDK's and pydantic's (they shape the schemas and their wire form), the
size and time of every Weaver source file (an editable install changes them), and every
setting. A missing, unreadable or stale manifest means the slow path, never a wrong list; and
each quick start checks its manifest against the server it then builds, rewriting it if
they differ.

Stdio only, and only for a server with the vault's files: over stdio every caller is the local
user, so tools/list is the same for every request (`access.current_grant`).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

import structlog
from mcp.server.mcpserver import MCPServer
from mcp_types import ListToolsResult
from pydantic import BaseModel

import weaver
from weaver.config import CACHE_DIR_NAME, Settings
from weaver.file_replace import replace_file

log = structlog.get_logger(__name__)

MANIFEST_NAME = "tools-manifest.json"
FORMAT = 1  # bumped when the file's own layout changes
MODEL_PACKAGES = ("mcp", "mcp_types", "weaver")  # where a handler's params model may come from


@dataclass(frozen=True)
class Manifest:
    """The server's identity, its handlers (method -> params model, `module:name`), what
    `initialize` answers (its `InitializationOptions`, capabilities as Weaver sets them), and
    its tools as tools/list puts them on the wire."""

    key: str
    name: str
    version: str
    title: str | None
    instructions: str | None
    requests: dict[str, str]
    notifications: dict[str, str]
    initialization: dict[str, Any]
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)


def manifest_key(settings: Settings) -> str:
    """What the answers depend on, hashed: the versions, Weaver's sources, the settings."""
    digest = hashlib.sha256()
    versions = [str(FORMAT), weaver.__version__, _version("mcp"), _version("pydantic")]
    digest.update("\0".join(versions).encode())
    digest.update(settings.model_dump_json().encode())
    digest.update(_sources_stamp().encode())
    return digest.hexdigest()


def _version(distribution: str) -> str:
    try:
        return installed_version(distribution)
    except PackageNotFoundError:  # run from a copy without metadata: the sources still count
        return ""


def _sources_stamp() -> str:
    """Every Weaver source file's path, size and modification time: a stat each, no read."""
    root = Path(weaver.__file__).parent
    entries = []
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        entries.append(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(entries)


def manifest_path(settings: Settings) -> Path | None:
    """`.weaver/tools-manifest.json` in the vault, when that folder exists (the cache's, by
    default); None otherwise: Weaver makes no folder in a vault just for this."""
    folder = settings.vault / CACHE_DIR_NAME
    return folder / MANIFEST_NAME if folder.is_dir() else None


def read_manifest(path: Path, key: str) -> Manifest | None:
    """The manifest at `path` if it was written under `key`; None if missing, stale or broken."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        manifest = Manifest(**data)
        for type_name in [*manifest.requests.values(), *manifest.notifications.values()]:
            params_model(type_name)  # each must still import: the SDK could have moved it
    except (OSError, ValueError, TypeError, ImportError, AttributeError):
        return None
    return manifest


def write_manifest(path: Path, manifest: Manifest) -> None:
    """Replace the file whole (a start reading it meanwhile sees the old one or the new one)."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        partial.write_text(json.dumps(asdict(manifest), indent=1), encoding="utf-8")
        replace_file(partial, path)  # Windows: a start reading it holds it for a moment
    except OSError as exc:  # a read-only vault: every start takes the slow path, still right
        log.warning("the tool manifest could not be written", path=str(path), error=str(exc))
        partial.unlink(missing_ok=True)


def params_model(type_name: str) -> type[BaseModel]:
    """The pydantic model `module:name` names, imported; only one of the SDK's or Weaver's own.
    The manifest is read before anything checks it, so a name elsewhere (a file edited by hand
    or by another program) must not make a start import a module of its choosing."""
    module, _, name = type_name.partition(":")
    if module.partition(".")[0] not in MODEL_PACKAGES:
        raise ImportError(f"{type_name}: a manifest names only models of {MODEL_PACKAGES}")
    found = getattr(importlib.import_module(module), name)
    if not (isinstance(found, type) and issubclass(found, BaseModel)):
        raise TypeError(f"{type_name} is not a pydantic model")
    return found


def _type_name(model: type[BaseModel]) -> str:
    return f"{model.__module__}:{model.__qualname__}"


async def manifest_of(server: MCPServer[Any], key: str) -> Manifest:
    """What `server` answers, as a manifest (tools/list as the local user asks it)."""
    lowlevel = server._lowlevel_server  # the handlers and identity live on the low-level server
    listed = ListToolsResult(tools=await server.list_tools())
    wire = listed.model_dump(by_alias=True, mode="json", exclude_none=True)
    return Manifest(
        key=key,
        name=lowlevel.name,
        version=lowlevel.version,
        title=lowlevel.title,
        instructions=lowlevel.instructions,
        requests={m: _type_name(e.params_type) for m, e in lowlevel._request_handlers.items()},
        notifications={
            m: _type_name(e.params_type) for m, e in lowlevel._notification_handlers.items()
        },
        initialization=lowlevel.create_initialization_options().model_dump(mode="json"),
        extensions=dict(lowlevel.extensions),
        tools=wire["tools"],
    )


async def keep_manifest(
    server: MCPServer[Any], settings: Settings, served: Manifest | None = None
) -> None:
    """Write `server`'s manifest unless the file already holds it. `served`: the manifest the
    first answers came from, which a difference makes worth a warning (a setting or file that
    shapes the tools but is not in the key)."""
    path = manifest_path(settings)
    if path is None:
        return
    key = served.key if served is not None else manifest_key(settings)
    current = await manifest_of(server, key)
    if served is not None and served != current:
        log.warning("the tool manifest differed from the tools served; rewritten", path=str(path))
    if current != (served or read_manifest(path, key)):
        write_manifest(path, current)
