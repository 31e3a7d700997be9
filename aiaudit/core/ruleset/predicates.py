# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Expectations a rule puts on one value: the params shape every param-driven check shares.

A rule states what it wants of a value with any combination of these params; all of them
must hold (a conjunction), so ``0 < MaxAuthTries <= 4`` is one rule:

``op`` + ``value``
    one comparison (:data:`aiaudit.core.ruleset.compare.OPS`: ``eq ne lt le gt ge in not_in``).
``min`` / ``max`` (+ ``min_exclusive`` / ``max_exclusive``, default ``false``)
    a numeric range; the bounds are inclusive unless the flag says otherwise
    (``min: 0, min_exclusive: true, max: 4`` is ``0 < x <= 4``).
``subset_of`` / ``contains`` / ``excludes`` / ``set_equals``
    the value as a set of elements (split at commas and whitespace, duplicates and order
    ignored): every element in the allowed list; every listed element present; none of the
    listed elements present; exactly the listed set.
``fields`` (+ ``field_separator``)
    the value split into fields (at whitespace by default, e.g. ``tcp_rmem``
    ``min default max``; ``":"`` for sshd ``MaxStartups start:rate:full``), each compared
    with its own expectation (any of the shapes above) or ``null`` for any value.  A
    missing field fails.

:func:`schema_properties` gives the JSON Schema of these params for a check's
``params_schema`` (so ``aiaudit validate`` reports a mistake with file and position);
:class:`Predicate` evaluates them, describes them for reports and ``aiaudit explain``, and
proposes a value that satisfies them for remediation.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from aiaudit.core.ruleset.compare import OPS, _eq, _num, describe, holds
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

SET_KEYS = ("subset_of", "contains", "excludes", "set_equals")
"""Params that compare the value as a set of elements."""
RANGE_KEYS = ("min", "max")
CONSTRAINT_KEYS = ("op", *RANGE_KEYS, *SET_KEYS, "fields")
"""A rule needs at least one of these."""
_SPLIT = lazy_pattern(r"[,\s]+")

_NUMBER = {"type": ["integer", "number"]}


def schema_properties(value: Mapping[str, Any] | None = None, *, fields: bool = True,
                      bound: Mapping[str, Any] | None = None,
                      ordered: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """JSON-Schema ``properties`` of the predicate params; ``value`` is the schema of one
    expected value (default: integer, number or string), ``ordered`` that of a value an
    ordering ``op`` compares in a per-field expectation (:func:`constraint_rules`),
    ``bound`` that of ``min`` /
    ``max`` (default: a number; sshd also takes a time such as ``5m``)."""
    one = dict(value) if value is not None else {"type": ["integer", "number", "string"]}
    num = dict(bound) if bound is not None else _NUMBER
    elem = {"type": ["integer", "string"]}
    elems = {"type": "array", "items": elem, "minItems": 1}
    props: dict[str, Any] = {
        "op": {"enum": list(OPS), "description": "comparison of the whole value with 'value'"},
        "value": {"oneOf": [one, {"type": "array", "items": one, "minItems": 1}],
                  "description": "expected value (a list for in / not_in)"},
        "min": {**num, "description": "least acceptable number (inclusive unless "
                "min_exclusive)"},
        "max": {**num, "description": "greatest acceptable number (inclusive unless "
                "max_exclusive)"},
        "min_exclusive": {"type": "boolean", "description": "the value must be > min"},
        "max_exclusive": {"type": "boolean", "description": "the value must be < max"},
        "subset_of": {**elems, "description": "every element of the value is one of these"},
        "contains": {**elems, "description": "the value has every one of these elements"},
        "excludes": {**elems, "description": "the value has none of these elements"},
        "set_equals": {"type": "array", "items": elem,
                       "description": "the value's elements are exactly these (order and "
                                      "duplicates ignored)"},
    }
    if fields:
        item = {"type": "object", "additionalProperties": False,
                "properties": schema_properties(value, fields=False, bound=bound),
                **constraint_rules(fields=False, ordered=ordered)}
        props["fields"] = {"type": "array", "minItems": 1,
                           "items": {"oneOf": [{"type": "null"}, item]},
                           "description": "per-field expectations of a multi-field value "
                                          "(null = any value)"}
        props["field_separator"] = {"type": "string", "minLength": 1, "maxLength": 4,
                                    "description": "what separates fields (default: "
                                                   "whitespace)"}
    return props


ORDERING_OPS = ("lt", "le", "gt", "ge")
"""The ``op`` values that compare numbers (:func:`aiaudit.core.ruleset.compare.holds`)."""
NUMBER_TEXT = r"^\s*[+-]?([0-9][0-9_]*\.?[0-9_]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
"""A string :func:`aiaudit.core.ruleset.compare._num` reads as a number (``"10"``,
``" 0.5 "``, ``1e3``)."""
NUMERIC_VALUE: dict[str, Any] = {"anyOf": [_NUMBER, {"type": "string", "pattern": NUMBER_TEXT}]}
"""The schema of a ``value`` an ordering ``op`` can compare: a number."""
SCHEMA_MESSAGE = "aiaudit_message"
"""A schema keyword of aiaudit's own: the message ``aiaudit validate`` gives when the
subschema that carries it refuses a value (a text), or refuses it through one keyword
(``{"anyOf": text}``); JSON Schema ignores unknown keywords."""


def ordered_value(alternatives: Sequence[Mapping[str, Any]] = (), what: str = "a number"
                  ) -> dict[str, Any]:
    """The schema of a ``value`` that ``lt``/``le``/``gt``/``ge`` compare: a number, or
    one of ``alternatives`` (a check's own spellings: ``unlimited``, a time ``5m``);
    ``what`` names them for the message."""
    return {"anyOf": [*NUMERIC_VALUE["anyOf"], *alternatives],
            SCHEMA_MESSAGE: f"op lt, le, gt and ge compare numbers: the value must be {what}"}


def constraint_rules(*, fields: bool = True,
                     ordered: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Schema keywords tying the predicate params together: at least one constraint,
    ``op`` and ``value`` together, an exclusive flag only with its bound, and a number
    (``ordered``, default :func:`ordered_value`) as the value of an ordering ``op`` (so
    ``op: le, value: ten`` is an ``aiaudit validate`` error with its position, not a scan
    error)."""
    keys = [k for k in CONSTRAINT_KEYS if fields or k != "fields"]
    return {
        "anyOf": [{"required": [k]} for k in keys],
        "dependentRequired": {"op": ["value"], "value": ["op"],
                              "min_exclusive": ["min"], "max_exclusive": ["max"],
                              **({"field_separator": ["fields"]} if fields else {})},
        SCHEMA_MESSAGE: {"anyOf": "the rule states no expectation: give op and value, "
                                  f"or any of {', '.join(keys[1:])}"},
        "if": {"required": ["op"], "properties": {"op": {"enum": list(ORDERING_OPS)}}},
        "then": {"properties": {"value": dict(ordered) if ordered is not None
                                else ordered_value()}},
    }


def elements(value: Any) -> list[str]:
    """The elements of a list value: a sequence as is, text split at commas and
    whitespace (``aes128-ctr,aes256-ctr``; ``admins ops``)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if str(v) != ""]
    return [e for e in _SPLIT().split(str(value).strip()) if e]


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


@record
class Predicate:
    """A rule's expectation of one value (see the module docstring)."""

    op: str | None = None
    value: Any = None
    min: int | float | None = None
    max: int | float | None = None
    min_exclusive: bool = False
    max_exclusive: bool = False
    subset_of: tuple[str, ...] | None = None
    contains: tuple[str, ...] | None = None
    excludes: tuple[str, ...] | None = None
    set_equals: tuple[str, ...] | None = None
    fields: tuple[Predicate | None, ...] | None = None
    field_separator: str | None = None

    @classmethod
    def from_params(cls, p: Mapping[str, Any],
                    normalise: Callable[[Any], Any] | None = None) -> Predicate:
        """Build from rule params; ``normalise`` maps each expected value (``value``,
        bounds and set elements) to the check's canonical form (sshd ``1m`` -> ``60``)."""
        def n(v: Any) -> Any:
            return normalise(v) if normalise is not None else v

        def elems(k: str) -> tuple[str, ...] | None:
            if k not in p or p[k] is None:
                return None
            return tuple(str(n(v)) for v in p[k])

        fields = None
        if p.get("fields") is not None:
            fields = tuple(None if f is None else cls.from_params(f, normalise)
                           for f in p["fields"])
        def bound(k: str) -> int | float | None:
            if p.get(k) is None:
                return None
            v = _num(n(p[k]))
            if v is None:
                raise ValueError(f"{k}: {p[k]!r} is not a number")
            return v

        value = p.get("value")
        return cls(
            op=p.get("op"), value=None if value is None else n(value),
            min=bound("min"), max=bound("max"),
            min_exclusive=bool(p.get("min_exclusive", False)),
            max_exclusive=bool(p.get("max_exclusive", False)),
            subset_of=elems("subset_of"), contains=elems("contains"),
            excludes=elems("excludes"), set_equals=elems("set_equals"),
            fields=fields, field_separator=p.get("field_separator"),
        )

    @property
    def is_empty(self) -> bool:
        """True when nothing is asked (every value holds)."""
        return self.op is None and self.min is None and self.max is None and \
            self.fields is None and all(getattr(self, k) is None for k in SET_KEYS)

    # -------------------------------------------------------------- evaluation
    def failures(self, actual: Any) -> list[str]:
        """What ``actual`` misses, one phrase per unmet constraint (empty: it holds).
        Raises :class:`ValueError` when a number is needed and ``actual`` is not one."""
        if actual is None:
            return ["unset"] if not self.is_empty else []
        out = self._field_failures(actual) if self.fields is not None else []
        scalar = " ".join(elements(actual)) if isinstance(actual, (list, tuple)) else actual
        if self.op is not None and not holds(scalar, self.op, self.value):
            out.append(f"not {describe(self.op, self.value)}")
        if self.min is not None or self.max is not None:
            out += self._range_failures(scalar)
        if any(getattr(self, k) is not None for k in SET_KEYS):
            out += self._set_failures(elements(actual))
        return out

    def _field_failures(self, actual: Any) -> list[str]:
        """The fields of ``actual`` that miss their expectation (or are missing)."""
        out: list[str] = []
        parts = self.split(actual)
        for i, f in enumerate(self.fields or ()):
            if f is None:
                continue
            if i >= len(parts):
                out.append(f"field {i + 1} missing")
            elif f.failures(parts[i]):
                out.append(f"field {i + 1} ({parts[i]}) is not {f.text()}")
        return out

    def _range_failures(self, scalar: Any) -> list[str]:
        """The bound ``scalar`` is on the wrong side of (``min``, ``max``)."""
        num = _num(scalar)
        if num is None:
            raise ValueError(f"'{scalar}' is not a number")
        out: list[str] = []
        if self.min is not None and (num <= self.min if self.min_exclusive
                                     else num < self.min):
            out.append(f"{'not above' if self.min_exclusive else 'below'} {_fmt(self.min)}")
        if self.max is not None and (num >= self.max if self.max_exclusive
                                     else num > self.max):
            out.append(f"{'not below' if self.max_exclusive else 'above'} {_fmt(self.max)}")
        return out

    def _set_failures(self, have: list[str]) -> list[str]:
        """What the elements ``have`` miss of the set constraints."""
        out: list[str] = []
        if self.subset_of is not None:
            extra = [e for e in dict.fromkeys(have) if not _member(e, self.subset_of)]
            if extra:
                out.append(f"{', '.join(extra)} not allowed")
        if self.contains is not None:
            lack = [e for e in self.contains if not _member(e, have)]
            if lack:
                out.append(f"lacks {', '.join(lack)}")
        if self.excludes is not None:
            bad = [e for e in self.excludes if _member(e, have)]
            if bad:
                out.append(f"has {', '.join(bad)}")
        if self.set_equals is not None:
            out += _set_difference(have, self.set_equals)
        return out

    def ok(self, actual: Any) -> bool:
        """True if ``actual`` satisfies every constraint (see :meth:`failures`)."""
        return not self.failures(actual)

    def split(self, actual: Any) -> list[str]:
        """``actual`` cut into fields (whitespace, or :attr:`field_separator`)."""
        if isinstance(actual, (list, tuple)):
            return [str(a) for a in actual]
        text = str(actual).strip()
        if self.field_separator is None:
            return text.split()
        return [f.strip() for f in text.split(self.field_separator)]

    # -------------------------------------------------------------- text
    def text(self) -> str:
        """Human form: ``> 0 and <= 4``, ``subset of a, b``, ``[>= 4096] [any] [>= 6]``."""
        parts: list[str] = []
        if self.fields is not None:
            sep = self.field_separator
            cells = ["[any]" if f is None else f"[{f.text()}]" for f in self.fields]
            parts.append((f" {sep} " if sep and not sep.isspace() else " ").join(cells))
        if self.op is not None:
            parts.append(describe(self.op, self.value))
        if self.min is not None:
            parts.append(f"{'>' if self.min_exclusive else '>='} {_fmt(self.min)}")
        if self.max is not None:
            parts.append(f"{'<' if self.max_exclusive else '<='} {_fmt(self.max)}")
        if self.subset_of is not None:
            parts.append(f"only of {', '.join(self.subset_of)}")
        if self.contains is not None:
            parts.append(f"containing {', '.join(self.contains)}")
        if self.excludes is not None:
            parts.append(f"without {', '.join(self.excludes)}")
        if self.set_equals is not None:
            parts.append("exactly {" + ", ".join(dict.fromkeys(self.set_equals)) + "}")
        return " and ".join(parts) if parts else "any value"

    # -------------------------------------------------------------- remediation
    def suggest(self, current: Any = None) -> str | None:
        """A value that satisfies the predicate, keeping as much of ``current`` as
        possible; ``None`` when no single value can be proposed."""
        if self.fields is not None:
            if self.op is not None or self.min is not None or self.max is not None:
                return None
            return self._suggest_fields(current)
        if any(getattr(self, k) is not None for k in SET_KEYS):
            return self._suggest_set(current)
        for c in self._candidates(current):
            try:
                if self.ok(c if not isinstance(c, float) or not c.is_integer() else int(c)):
                    return _fmt(c)
            except ValueError:
                continue
        return None

    def _suggest_fields(self, current: Any) -> str | None:
        """Each field's current value where it holds, else its own suggestion."""
        have = self.split(current) if current is not None else []
        out = []
        for i, f in enumerate(self.fields or ()):
            cur = have[i] if i < len(have) else None
            if f is None:
                if cur is None:
                    return None
                out.append(cur)
                continue
            try:
                keep = cur is not None and f.ok(cur)
            except ValueError:
                keep = False
            v = cur if keep else f.suggest(cur)
            if v is None:
                return None
            out.append(v)
        sep = self.field_separator
        return (sep if sep else " ").join(out)

    def _candidates(self, current: Any) -> list[Any]:
        """Values to try for a scalar: the rule's own bound first (what the rule names),
        then ``current``."""
        cand: list[Any] = []
        if self.op in ("eq", "le", "ge") and not isinstance(self.value, list):
            cand.append(self.value)
        if self.op == "in":
            cand.append(self.value[0] if isinstance(self.value, list) else self.value)
        if self.op in ("lt", "gt") and isinstance(self.value, int) \
                and not isinstance(self.value, bool):
            cand.append(self.value - 1 if self.op == "lt" else self.value + 1)
        for bound, excl, step in ((self.max, self.max_exclusive, -1),
                                  (self.min, self.min_exclusive, 1)):
            if bound is not None:
                cand.append(bound + step if excl and isinstance(bound, int) else bound)
        if current is not None:
            cand.append(current)
        return cand

    def _suggest_set(self, current: Any) -> str | None:
        if self.set_equals is not None:
            out = list(dict.fromkeys(self.set_equals))
        else:
            out = [e for e in dict.fromkeys(elements(current))
                   if self.subset_of is None or _member(e, self.subset_of)]
            if self.excludes is not None:
                out = [e for e in out if not _member(e, self.excludes)]
            for e in self.contains or ():
                if not _member(e, out):
                    out.append(e)
        if not out or not self.ok(out):
            return None
        sep = "," if isinstance(current, str) and "," in current else " "
        return sep.join(out)


def _set_difference(have: list[str], want: Sequence[str]) -> list[str]:
    """How the elements ``have`` differ from exactly the set ``want`` (none: they do not)."""
    lack = [e for e in dict.fromkeys(want) if not _member(e, have)]
    extra = [e for e in dict.fromkeys(have) if not _member(e, want)]
    if not lack and not extra:
        return []
    diff = [*(f"-{e}" for e in lack), *(f"+{e}" for e in extra)]
    return [f"differs from the set ({' '.join(diff)})"]


def _member(e: str, within: Sequence[str]) -> bool:
    return any(_eq(e, w) for w in within)
