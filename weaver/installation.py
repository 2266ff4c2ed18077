"""How this Weaver was installed, and so how to add an extra to it or start it again.

A hint that says `pip install` inside a pipx or uv tool environment installs into some other
Python, and a client entry naming a script inside uv's cache breaks at the next `uv cache
clean`. Each installer leaves a mark in the environment it made:

- `uvx` runs a tool in an environment kept in uv's cache, whose root holds a `CACHEDIR.TAG`:
  disposable, so it is started again with `uvx weaver-mcp`, never by its path;
- `uv tool install` writes `uv-receipt.toml` at the environment's root;
- pipx writes `pipx_metadata.json` at the root of each environment it makes;
- otherwise the `INSTALLER` file of the distribution's metadata names `uv` (`uv pip`) or
  `pip`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

DISTRIBUTION = "weaver-mcp"
# The script named as the distribution, which is what `uvx weaver-mcp` runs.
UVX_SCRIPT = "weaver-mcp"

Installer = Literal["uvx", "uv-tool", "pipx", "uv", "pip"]
# A `Requires-Dist` line: the requirement, then its marker (`; extra == "semantic"`).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")


def detect_installer(prefix: Path | None = None, installer: str | None = None) -> Installer:
    """Which installer made the environment at `prefix` (default: this one). `installer` is
    the distribution's `INSTALLER` text (default: read from the installed metadata)."""
    root = Path(sys.prefix if prefix is None else prefix)
    if any((folder / "CACHEDIR.TAG").is_file() for folder in (root, *root.parents)):
        return "uvx"
    if (root / "uv-receipt.toml").is_file():
        return "uv-tool"
    if (root / "pipx_metadata.json").is_file():
        return "pipx"
    named = _installer_file() if installer is None else installer
    return "uv" if named.strip() == "uv" else "pip"


@functools.cache
def this_installer() -> Installer:
    """`detect_installer` of this process, once: health checks repeat the hint."""
    return detect_installer()


def extra_command(extra: str, kind: Installer | None = None) -> str:
    """The command that adds the optional dependencies `extra` to this Weaver."""
    kind = this_installer() if kind is None else kind
    wanted = f"{DISTRIBUTION}[{extra}]"
    match kind:
        case "uvx":
            return shlex.join(["uvx", "--from", wanted, UVX_SCRIPT, "..."])
        case "uv-tool":
            return shlex.join(["uv", "tool", "install", wanted])
        case "pipx":
            requirements = extra_requirements(extra)
            if not requirements:  # metadata unreadable: the whole package again, with it
                return shlex.join(["pipx", "install", "--force", wanted])
            return shlex.join(["pipx", "inject", DISTRIBUTION, *requirements])
        case "uv":
            return shlex.join(["uv", "pip", "install", wanted])
        case _:
            return shlex.join(["pip", "install", wanted])


def uvx_command() -> list[str]:
    """How to start Weaver through uvx, with the extras this environment has: an environment
    in uv's cache is gone after `uv cache clean`, and uvx makes it again from this."""
    uvx = shutil.which("uvx")
    extras = installed_extras(offered_extras())
    source = ["--from", f"{DISTRIBUTION}[{','.join(extras)}]"] if extras else []
    return [str(Path(uvx).absolute()) if uvx else "uvx", *source, UVX_SCRIPT]


def offered_extras() -> list[str]:
    """The extras a user installs (the metadata's `Provides-Extra`, but `dev`)."""
    try:
        offered = importlib.metadata.metadata(DISTRIBUTION).get_all("Provides-Extra") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    return [extra for extra in offered if extra != "dev"]


def install_hint(extra: str) -> str:
    """`install the extra: <command>`, the command matching how Weaver was installed."""
    return f"install the extra: {extra_command(extra)}"


def extra_requirements(extra: str) -> list[str]:
    """The requirements `extra` adds, as the installed metadata lists them (no markers)."""
    try:
        listed: Sequence[str] = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for line in listed:
        requirement, _, marker = line.partition(";")
        if (named := _EXTRA_MARKER.search(marker)) and named.group(1) == extra:
            found.append(requirement.strip())
    return found


def installed_extras(extras: Sequence[str]) -> list[str]:
    """Those of `extras` whose every requirement is installed here."""
    present = []
    for extra in extras:
        names = [m.group() for r in extra_requirements(extra) if (m := _NAME.match(r))]
        if names and all(_installed(name) for name in names):
            present.append(extra)
    return present


def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _installer_file() -> str:
    try:
        return importlib.metadata.distribution(DISTRIBUTION).read_text("INSTALLER") or ""
    except importlib.metadata.PackageNotFoundError:
        return ""
