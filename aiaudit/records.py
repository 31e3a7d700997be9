"""``@record``: dataclasses with ``dataclasses`` semantics and a fraction of the class cost.

Why this exists: on CPython 3.10 and 3.11, ``@dataclass(frozen=True)`` compiles six methods
per class, one ``exec`` each (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``, ``__delattr__``): about 0.45 ms a class, and a scan imports some hundred
record classes (results, evidence, parser records), so 45 ms of every scan went to
compiling the same few methods again (measured with ``bench/bench.py``; the whole scan
budget is a few times Python's own start-up).

``record`` lets :mod:`dataclasses` collect the fields (so ``dataclasses.fields``,
``replace``, ``asdict``, ``astuple``, ``is_dataclass`` and ``__match_args__`` work
unchanged), builds ``__init__`` from a template compiled once per shape of fields (required,
default, factory) with the field names put into the code object, and gives every class the same
shared ``__eq__``, ``__hash__``, ``__repr__`` and, when frozen, ``__setattr__`` and
``__delattr__``, which read the fields through one per-class ``operator.attrgetter``.  The
behaviour is that of ``@dataclass(frozen=True)`` (or plain ``@dataclass`` with
``frozen=False``): equality only between instances of the same class, field by field, in
order; the hash of the field values; ``Name(field=value, ...)`` as repr; assignment raises
:class:`dataclasses.FrozenInstanceError`.  What it does not support (``init=False`` fields,
``kw_only``, ``InitVar``, ``__post_init__``, ``order``, ``compare=False``) is refused when
the class is defined, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
from collections.abc import Callable
from types import CodeType, FunctionType
from typing import Any, TypeVar, overload

_T = TypeVar("_T", bound=type)

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10: type checkers fall back to plain classes
    def dataclass_transform(**_kw: Any) -> Callable[[Any], Any]:
        """No-op stand-in where :func:`typing.dataclass_transform` does not exist."""
        return lambda f: f


class _HasFactory:
    """Sentinel default of a field with a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_FACTORY = _HasFactory()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = self.__class__._record_key
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__class__._record_key(self))


def _repr(self: Any) -> str:
    cls = self.__class__
    inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in cls._record_names)
    return f"{cls.__qualname__}({inner})"


def _single_key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The field tuple of a record with zero or one field."""
    if not names:
        return lambda _self: ()
    name = names[0]
    return lambda self: (getattr(self, name),)


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _unsupported(cls: type, fields: list[dataclasses.Field[Any]]) -> str | None:
    """Why ``cls`` needs the full ``@dataclass``, or ``None``."""
    if "__post_init__" in cls.__dict__:
        return "__post_init__"
    if any(f.name == "self" for f in fields):
        return "a field named 'self'"
    for f in fields:
        if not f.init or not f.compare or f.kw_only is True:
            return f"field {f.name!r} with init/compare/kw_only options"
    seen_default = False
    for f in fields:
        has = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if seen_default and not has:
            return f"non-default argument {f.name!r} follows default argument"
        seen_default |= has
    return None


_TEMPLATES: dict[tuple[str, ...], CodeType] = {}
"""``__init__`` code per shape of fields, compiled once per process."""


def _template(shape: tuple[str, ...]) -> CodeType:
    """The code of an ``__init__`` for fields of these kinds (``r`` required, ``d`` with a
    default, ``f`` with a default factory), with placeholder names: parameter ``_fN`` sets
    attribute ``"\0N"`` (a string no identifier can equal).  Record classes share a few
    dozen shapes, so most classes reuse a template instead of compiling their own."""
    code = _TEMPLATES.get(shape)
    if code is None:
        params, body = ["self"], []
        for i, kind in enumerate(shape):
            params.append(f"_f{i}" if kind == "r" else f"_f{i}=None")
            value = f"__factory_{i}() if _f{i} is __has_factory else _f{i}" if kind == "f" \
                else f"_f{i}"
            body.append(f"    __object_setattr(self, {chr(0) + str(i)!r}, {value})\n")
        src = f"def __init__({', '.join(params)}):\n{''.join(body) or '    pass'}\n"
        ns: dict[str, Any] = {}
        exec(src, {}, ns)
        code = _TEMPLATES[shape] = ns["__init__"].__code__
    return code


def _make_init(cls: type, fields: list[dataclasses.Field[Any]]) -> Callable[..., None]:
    """``__init__`` for ``fields``, as a frozen dataclass's: parameters named and ordered as
    the fields, defaults and default factories applied, values set with
    ``object.__setattr__``.  Built from the shape's template (:func:`_template`) with the
    field names put in (``CodeType.replace``): no compilation per class."""
    glb: dict[str, Any] = {"__object_setattr": object.__setattr__, "__has_factory": _HAS_FACTORY}
    shape, defaults = [], []
    for i, f in enumerate(fields):
        if f.default_factory is not dataclasses.MISSING:
            glb[f"__factory_{i}"] = f.default_factory
            shape.append("f")
            defaults.append(_HAS_FACTORY)
        elif f.default is not dataclasses.MISSING:
            shape.append("d")
            defaults.append(f.default)
        else:
            shape.append("r")
    code = _template(tuple(shape))
    names = [f.name for f in fields]
    consts = tuple(names[int(c[1:])] if isinstance(c, str) and c[:1] == "\0" else c
                   for c in code.co_consts)
    qualname = f"{cls.__qualname__}.__init__"
    extra = {"co_qualname": qualname} if sys.version_info >= (3, 11) else {}
    code = code.replace(co_varnames=("self", *names), co_consts=consts, **extra)
    init = FunctionType(code, glb, "__init__", tuple(defaults) or None)
    init.__qualname__ = qualname
    init.__module__ = cls.__module__
    init.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    return init


@overload
def record(cls: _T, /) -> _T: ...
@overload
def record(*, frozen: bool = True) -> Callable[[_T], _T]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: Any = None, /, *, frozen: bool = True) -> Any:
    """Class decorator: ``@record`` is ``@dataclass(frozen=True)``, ``@record(frozen=False)``
    is ``@dataclass``; see the module docstring for what is supported."""

    def wrap(cls: type) -> type:
        undocumented = cls.__doc__ is None
        if undocumented:  # else dataclasses asks inspect.signature for one: ~3 ms, once
            cls.__doc__ = "record"  # any non-empty text: replaced below
        cls = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
        fields = [f for f in cls.__dataclass_fields__.values()  # type: ignore[attr-defined]
                  if f._field_type is dataclasses._FIELD]  # type: ignore[attr-defined]
        why = _unsupported(cls, fields)
        if why:
            raise TypeError(f"@record does not support {why} (class {cls.__qualname__}); "
                            "use @dataclass")
        names = tuple(f.name for f in fields)
        if undocumented:  # what dataclasses would have written, less the types
            cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
        cls._record_names = names  # type: ignore[attr-defined]
        # always a tuple, so equality and hash are exactly those of the field tuple
        cls._record_key = (operator.attrgetter(*names)  # type: ignore[attr-defined]
                           if len(names) > 1 else _single_key(names))
        cls.__init__ = _make_init(cls, fields)  # type: ignore[misc]
        own = cls.__dict__
        if "__repr__" not in own:
            cls.__repr__ = _repr  # type: ignore[method-assign]
        if "__eq__" not in own:
            cls.__eq__ = _eq  # type: ignore[method-assign,assignment]
            # as dataclasses: frozen + eq -> hashable by value; mutable + eq -> unhashable
            cls.__hash__ = _hash if frozen else None  # type: ignore[method-assign,assignment]
        if frozen:
            cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign,assignment]
            cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign,assignment]
            cls.__dataclass_params__.frozen = True  # type: ignore[attr-defined]
        return cls

    return wrap if cls is None else wrap(cls)
