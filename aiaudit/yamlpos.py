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

    def walk(node: yaml.Node | None) -> None:
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
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return Located(data, node, origin)


def error_message(exc: yaml.YAMLError, origin: str) -> str:
    """One-line ``file:line:col: problem`` for a YAML syntax error."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"{origin}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {problem}"
    return f"{origin}: invalid YAML: {problem}"
