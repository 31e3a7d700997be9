# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""YAML loading that keeps positions, so every problem can name file, line and column."""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Any, Sequence

from aiaudit.core.startup.records import record

if TYPE_CHECKING:  # yaml is imported only when a YAML document is really parsed
    import yaml


MAX_INT_CHARS = 100
"""Longest integer scalar accepted (a ruleset or waiver number has a few digits).  Python
refuses to convert more than 4,300 digits (ValueError, no position), and a YAML 1.1
sexagesimal integer (``1:2:3:...``) of a megabyte takes minutes of big-number arithmetic."""


@cache
def _loader_class() -> type:
    """The (C, where available) safe loader, with positions on every construction error."""
    import yaml

    # the C loader is several times faster; fall back to pure Python where absent
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Positioned(base):  # type: ignore[misc, valid-type]
        """Every error while building a value (``!!int x``, ``!!timestamp 2026-02-30``, an
        integer of thousands of digits) becomes a :class:`yaml.MarkedYAMLError` at the node
        concerned, so the message names file, line and column."""

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except yaml.YAMLError:
                raise
            except (ValueError, TypeError, ArithmeticError, LookupError) as exc:
                raise yaml.constructor.ConstructorError(
                    None, None, f"cannot read {node.tag} value: {_first_line(exc)}",
                    node.start_mark) from None

        def construct_yaml_int(self, node: yaml.Node) -> int:
            if isinstance(node.value, str) and len(node.value) > MAX_INT_CHARS:
                raise yaml.constructor.ConstructorError(
                    None, None, f"integer of {len(node.value)} characters (at most "
                    f"{MAX_INT_CHARS})", node.start_mark)
            value: int = super().construct_yaml_int(node)
            return value

    Positioned.add_constructor("tag:yaml.org,2002:int", Positioned.construct_yaml_int)
    return Positioned


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 200 else line[:200] + "..."


@record
class Located:
    """A loaded YAML document with its node tree, to map data paths back to positions."""

    data: Any
    node: yaml.Node | None
    origin: str
    """File name (or resource name) for messages."""
    duplicates: tuple[str, ...] = field(default=())
    """Messages for keys that appear twice in one mapping, found before the document was
    built (building applies merge keys, which rewrites the mappings of the node tree)."""

    def where(self, path: Sequence[str | int] = ()) -> str:
        """``origin:line:col`` of the deepest node reachable along ``path``."""
        if self.node is None:  # parsed from a JSON twin: no positions
            return self.origin
        node = self.node
        for key in path:
            child = _child(node, key)
            if child is None:
                break
            node = child
        if node is None:
            return self.origin
        mark = node.start_mark
        return f"{self.origin}:{mark.line + 1}:{mark.column + 1}"


def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                found: yaml.Node = v
                return found
    elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
        if 0 <= key < len(node.value):
            item: yaml.Node = node.value[key]
            return item
    return None


def duplicate_keys(doc: Located) -> list[str]:
    """Messages for mapping keys that appear twice (YAML would silently keep the last)."""
    return list(doc.duplicates)


def _duplicates(root: yaml.Node | None, origin: str) -> tuple[str, ...]:
    """Keys that appear twice in one mapping of the (not yet built) node tree.  A merge key
    (``<<: *defaults``) is not a key of its own: the keys it brings in may be overridden."""
    import yaml

    out: list[str] = []
    walked: set[int] = set()
    stack = [root]
    while stack:  # no recursion: nesting is bounded by check_aliases, but stay flat anyway
        node = stack.pop()
        if node is None or id(node) in walked:  # an alias: checked where it was defined
            continue
        walked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                    if k.value in seen:
                        m = k.start_mark
                        out.append(f"{origin}:{m.line + 1}:{m.column + 1}: "
                                   f"duplicate key {k.value!r}")
                    seen.add(k.value)
                stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return tuple(sorted(out, key=_mark_order))


def _mark_order(message: str) -> tuple[int, int]:
    parts = message.split(": ", 1)[0].rsplit(":", 2)
    try:
        return int(parts[-2]), int(parts[-1])
    except (IndexError, ValueError):
        return 0, 0


def load(text: str, origin: str, loader_class: type | None = None) -> Located:
    """Parse one YAML document; raises :class:`yaml.YAMLError` with a position.
    ``loader_class`` replaces the (C) safe loader, e.g. one with other constructors."""
    loader = (loader_class or _loader_class())(text)
    try:
        node = loader.get_single_node()
        dups: tuple[str, ...] = ()
        if node is not None:
            check_aliases(node)
            dups = _duplicates(node, origin)
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return Located(data, node, origin, dups)


MAX_DEPTH = 100
"""Deepest nesting a document may have (aliases expanded).  Real files nest a few levels;
Python walks the data recursively (validation, duplicate keys) with a limit of 1,000."""

MAX_EXPANDED_NODES = 100_000
"""Most nodes a document may stand for once its aliases are expanded.  A ruleset or waiver
file has a few thousand; a "billion laughs" file (nine aliases of nine aliases of ...) has
billions, and every later walk of the data (validation, duplicate keys) would take hours."""


def check_aliases(root: yaml.Node) -> None:
    """Refuse a node graph whose aliases loop (a recursive structure: validation would
    recurse forever), that nests deeper than :data:`MAX_DEPTH` or expands to more than
    :data:`MAX_EXPANDED_NODES` nodes.  Each node is
    visited once (shared nodes are counted, not walked, again), without recursion; raises
    :class:`yaml.MarkedYAMLError` at the node concerned."""
    import yaml

    def children(node: yaml.Node) -> list[yaml.Node]:
        if isinstance(node, yaml.MappingNode):
            return [n for pair in node.value for n in pair]
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        return []

    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    open_: set[int] = set()  # entered, not finished: the ancestors of what is on top
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_.discard(key)
            kids = [id(c) for c in children(node)]
            sizes[key] = size = 1 + sum(sizes[k] for k in kids)
            heights[key] = height = 1 + max((heights[k] for k in kids), default=0)
            if height > MAX_DEPTH:
                raise yaml.MarkedYAMLError(problem=f"nested deeper than {MAX_DEPTH} levels",
                                           problem_mark=node.start_mark)
            if size > MAX_EXPANDED_NODES:
                raise yaml.MarkedYAMLError(
                    problem=f"aliases expand this to more than {MAX_EXPANDED_NODES} nodes",
                    problem_mark=node.start_mark)
            continue
        if key in sizes:
            continue
        if key in open_:
            raise yaml.MarkedYAMLError(problem="recursive alias (a node that contains itself)",
                                       problem_mark=node.start_mark)
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children(node) if id(c) not in sizes)


def error_message(exc: yaml.YAMLError, origin: str, text: str | None = None) -> str:
    """One-line ``file:line:col: problem`` for a YAML syntax error.  A reader error (a NUL
    byte or another character YAML does not allow) carries only a character offset:
    ``text`` turns it into line and column."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None and isinstance(getattr(exc, "position", None), int) and text is not None:
        char = getattr(exc, "character", None)
        # the reader checks characters without context, so the first occurrence of the
        # refused character is the place (the C reader's offset counts UTF-8 bytes)
        at = text.find(chr(char)) if isinstance(char, int) else -1
        line, col = position(text, at if at >= 0 else exc.position)  # type: ignore[attr-defined]
        what = f"character #x{char:04x}" if isinstance(char, int) else "a character"
        return f"{origin}:{line}:{col}: invalid YAML: {what} is not allowed in YAML"
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["error"])[0]
    if mark is not None:
        return f"{origin}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {problem}"
    return f"{origin}: invalid YAML: {problem}"


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of character ``offset`` of ``text``."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
