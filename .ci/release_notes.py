"""The release notes of a tag, from CHANGELOG.md (docs/releasing.md).

    python release_notes.py v0.2.0               # prints the section `## [0.2.0] - <date>`
    python release_notes.py --check-tag v0.2.0   # exits non-zero unless the tag is `v` + the
                                                 # package's version and the CHANGELOG has it

Run by .github/workflows/release.yml; reads the files, imports nothing of Weaver's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)
SECTION = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$")


class ReleaseError(Exception):
    pass


def package_version(root: Path = ROOT) -> str:
    found = VERSION.search((root / "weaver" / "__init__.py").read_text(encoding="utf-8"))
    if found is None:
        raise ReleaseError("weaver/__init__.py sets no __version__")
    return found.group(1)


def version_of_tag(tag: str) -> str:
    if not re.fullmatch(r"v\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?", tag):
        raise ReleaseError(f"tag {tag!r} is not vX.Y.Z (or vX.Y.Z followed by a1, b1, rc1)")
    return tag[1:]


def section(changelog: str, version: str) -> str:
    """The body of `## [version] - date`, up to the next `## ` heading, stripped."""
    lines = changelog.splitlines()
    for start, line in enumerate(lines):
        match = SECTION.match(line)
        if match and match["version"] == version:
            if match["date"] is None:
                raise ReleaseError(f"CHANGELOG.md's section for {version} has no date")
            end = next(
                (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
                len(lines),
            )
            body = "\n".join(lines[start + 1 : end]).strip()
            if not body:
                raise ReleaseError(f"CHANGELOG.md's section for {version} is empty")
            return body
    raise ReleaseError(f"CHANGELOG.md has no section `## [{version}] - YYYY-MM-DD`")


def check_tag(tag: str, root: Path = ROOT) -> str:
    version = version_of_tag(tag)
    if version != package_version(root):
        raise ReleaseError(f"tag {tag} but the package is {package_version(root)}")
    return section((root / "CHANGELOG.md").read_text(encoding="utf-8"), version)


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 2 and argv[0] == "--check-tag":
            check_tag(argv[1])
            print(f"{argv[1]}: the package's version, with its CHANGELOG section")
        elif len(argv) == 1:
            changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
            print(section(changelog, version_of_tag(argv[0])))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except ReleaseError as exc:
        print(f"release_notes: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
