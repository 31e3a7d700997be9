"""YAML loading that keeps positions, so every problem can name file, line and column."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from aiaudit.records import record

if TYPE_CHECKING:  # yaml is imported only when a YAML document is really parsed
    import yaml


def _loader_class() -> type:
    import yaml

    # the C loader is several times faster; fall back to pure Python where absent
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@record
class Located:
    """A loaded YAML document with its node tree, to map data paths back to positions."""

    data: Any
    node: yaml.Node | None
    origin: str
    """File name (or resource name) for messages."""

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
                return v
    elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
        if 0 <= key < len(node.value):
            return node.value[key]
    return None


def duplicate_keys(doc: Located) -> list[str]:
    """Messages for mapping keys that appear twice (YAML would silently keep the last)."""
    import yaml

    out: list[str] = []

    walked: set[int] = set()

    def walk(node: yaml.Node | None) -> None:
        if id(node) in walked:  # an alias: its node was checked where it was defined
            return
        walked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in seen:
                        m = k.start_mark
                        out.append(
                            f"{doc.origin}:{m.line + 1}:{m.column + 1}: "
                            f"duplicate key {k.value!r}"
                        )
                    seen.add(k.value)
                walk(v)
        elif isinstance(node, yaml.SequenceNode):
            for v in node.value:
                walk(v)

    walk(doc.node)
    return out


def load(text: str, origin: str, loader_class: type | None = None) -> Located:
    """Parse one YAML document; raises :class:`yaml.YAMLError` with a position.
    ``loader_class`` replaces the (C) safe loader, e.g. one with other constructors."""
    loader = (loader_class or _loader_class())(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            check_aliases(node)
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return Located(data, node, origin)


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


def error_message(exc: yaml.YAMLError, origin: str) -> str:
    """One-line ``file:line:col: problem`` for a YAML syntax error."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"{origin}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {problem}"
    return f"{origin}: invalid YAML: {problem}"
