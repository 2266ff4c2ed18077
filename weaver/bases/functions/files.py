"""Methods of files and links: `file.hasTag()`, `file.inFolder()`, `file.hasLink()`,
`file.hasProperty()`, `file.asLink()`, `link.asFile()`, `link.linksTo()`."""

from __future__ import annotations

from weaver.bases.functions.registry import Function, Invocation, expect, fn
from weaver.bases.values import File, FileFacts, Link, Value, ValueTypeError, same_note, to_text


def _facts(call: Invocation) -> FileFacts:
    assert isinstance(call.receiver, File)
    return call.receiver.facts


def _has_tag(call: Invocation) -> Value:
    tags = [tag.lstrip("#").casefold() for tag in _facts(call).tags]
    for wanted in call.args:
        expect(wanted, str, "hasTag()'s tags")
        name = str(wanted).lstrip("#").casefold()
        # A tag includes its nested tags: `book` matches `book/fiction`.
        if any(tag == name or tag.startswith(name + "/") for tag in tags):
            return True
    return False


def _in_folder(call: Invocation) -> Value:
    expect(call.args[0], str, "inFolder()'s folder")
    folder = str(call.args[0]).strip("/")
    own = _facts(call).folder.strip("/")
    return not folder or own == folder or own.startswith(folder + "/")


def _target(value: Value, name: str) -> str:
    match value:
        case File():
            return value.facts.path
        case Link():
            return value.target
        case str():
            return value
    raise ValueTypeError(f"{name} must be a file, link or string, not {to_text(value)!r}")


def _has_link(call: Invocation) -> Value:
    target = _target(call.args[0], "hasLink()'s argument")
    return any(same_note(target, link) for link in _facts(call).links)


def _has_property(call: Invocation) -> Value:
    expect(call.args[0], str, "hasProperty()'s name")
    return str(call.args[0]) in _facts(call).properties


def _as_link(call: Invocation) -> Value:
    display = to_text(call.args[0]) if call.args and call.args[0] is not None else None
    return Link(_facts(call).path, display)


def _link(call: Invocation) -> Link:
    assert isinstance(call.receiver, Link)
    return call.receiver


def _as_file(call: Invocation) -> Value:
    facts = call.env.find_file(_link(call).target)
    return None if facts is None else File(facts)


def _links_to(call: Invocation) -> Value:
    source = call.env.find_file(_link(call).target)
    target = _target(call.args[0], "linksTo()'s argument")
    return source is not None and any(same_note(target, link) for link in source.links)


FUNCTIONS: tuple[Function, ...] = (
    fn("file", "hasTag", _has_tag, (1, None)),
    fn("file", "inFolder", _in_folder, (1, 1)),
    fn("file", "hasLink", _has_link, (1, 1)),
    fn("file", "hasProperty", _has_property, (1, 1)),
    fn("file", "asLink", _as_link, (0, 1)),
    fn("link", "asFile", _as_file),
    fn("link", "linksTo", _links_to, (1, 1)),
)
