# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""``@record``: dataclasses with ``dataclasses`` semantics and a fraction of the class cost.

Why this exists: on CPython 3.10 and 3.11, ``@dataclass(frozen=True)`` compiles six methods
per class, one ``exec`` each (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``, ``__delattr__``): about 0.45 ms a class, and a scan imports some hundred
record classes (results, evidence, parser records), so 45 ms of every scan went to
compiling the same few methods again (measured with ``bench/bench.py``; the whole scan
budget is a few times Python's own start-up).

``record`` lets :mod:`dataclasses` collect the fields (so ``dataclasses.fields``,
``replace``, ``asdict``, ``astuple``, ``is_dataclass`` and ``__match_args__`` work
unchanged), builds ``__init__`` from a template compiled once per number of fields
(defaults on the function, default factories applied by one shared call) with the field
names put into the code object, and gives every class the same
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

_FIELD: Any = vars(dataclasses)["_FIELD"]
"""The marker dataclasses gives a plain field (``Field._field_type``; private, untyped)."""


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
    for f in fields:
        if f.name == "self":
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


_TEMPLATES: dict[int, CodeType] = {}
"""``__init__`` code per number of fields, compiled once per process."""


def template_source(count: int, name: str = "__init__") -> str:
    """The source of an ``__init__`` for ``count`` fields, with placeholder names: parameter
    ``_fN`` sets attribute ``"\0N"`` (a string no identifier can equal).  Defaults are not
    part of the code (they live in the function's ``__defaults__``) and default factories
    are applied by one call at the end, so the code depends only on the number of fields:
    the record classes of a scan share a dozen templates instead of one per layout of
    required, default and factory fields (54 of them)."""
    params = ["self", *(f"_f{i}" for i in range(count))]
    body = [f"    __object_setattr(self, {chr(0) + str(i)!r}, _f{i})\n" for i in range(count)]
    return (f"def {name}({', '.join(params)}):\n{''.join(body)}"
            "    if __factories:\n        __fill(self, __factories)\n")


def _template(count: int) -> CodeType:
    """The code of the ``__init__`` template for ``count`` fields
    (:func:`template_source`): from :mod:`.init_templates`, compiled when the package was
    installed (a scan uses a dozen: compiling them in every process cost a one-rule scan
    8 M instructions, 3%), else compiled here once per process."""
    code = _TEMPLATES.get(count)
    if code is None:
        from aiaudit.core.startup import init_templates

        made = getattr(init_templates, f"init_{count}", None)
        if made is not None:
            code = made.__code__.replace(co_name="__init__")
        else:
            ns: dict[str, Any] = {}
            exec(template_source(count), {}, ns)
            code = ns["__init__"].__code__
        _TEMPLATES[count] = code
    return code


TEMPLATES_MAX = 32
"""Field counts with a template in :mod:`.init_templates` (0 to this)."""


def templates_module() -> str:
    """The text of :mod:`.init_templates` (``python -m aiaudit.core.startup.records``
    writes it; a test compares)."""
    head = ('"""Generated by ``python -m aiaudit.core.startup.records``: the ``__init__``\n'
            "templates of :mod:`aiaudit.core.startup.records` for 0 to "
            f"{TEMPLATES_MAX} fields, compiled\nwhen the package is installed.  The names "
            "they use are the globals ``records`` gives\neach ``__init__`` it builds.  Do "
            'not edit."""\n\n# ruff: noqa\n# mypy: ignore-errors\n')
    return head + "".join("\n\n" + template_source(n, f"init_{n}")
                          for n in range(TEMPLATES_MAX + 1))


def _fill(self: Any, factories: tuple[tuple[str, Callable[[], Any]], ...]) -> None:
    """Give every field still holding the factory sentinel a fresh value of its factory."""
    for name, factory in factories:
        if getattr(self, name) is _HAS_FACTORY:
            object.__setattr__(self, name, factory())


def _make_init(cls: type, fields: list[dataclasses.Field[Any]]) -> Callable[..., None]:
    """``__init__`` for ``fields``, as a frozen dataclass's: parameters named and ordered as
    the fields, defaults and default factories applied, values set with
    ``object.__setattr__``.  Built from the template for this many fields
    (:func:`_template`) with the field names put in (``CodeType.replace``): no compilation
    per class."""
    defaults, factories = [], []
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:
            factories.append((f.name, f.default_factory))
            defaults.append(_HAS_FACTORY)
        elif f.default is not dataclasses.MISSING:
            defaults.append(f.default)
    glb: dict[str, Any] = {"__object_setattr": object.__setattr__, "__fill": _fill,
                           "__factories": tuple(factories)}
    code = _template(len(fields))
    names = [f.name for f in fields]
    consts = tuple([names[int(c[1:])] if isinstance(c, str) and c[:1] == "\0" else c
                    for c in code.co_consts])
    qualname = f"{cls.__qualname__}.__init__"
    if sys.version_info >= (3, 11):
        code = code.replace(co_varnames=("self", *names), co_consts=consts,
                            co_qualname=qualname)
    else:  # pragma: no cover - Python 3.10: no co_qualname
        code = code.replace(co_varnames=("self", *names), co_consts=consts)
    init = FunctionType(code, glb, "__init__", tuple(defaults) or None)
    init.__qualname__ = qualname
    init.__module__ = cls.__module__
    init.__annotations__ = {**{f.name: f.type for f in fields}, "return": None}
    return init


def _params(frozen: bool) -> Any:
    """A ``__dataclass_params__`` value as ``dataclass(init=False, repr=False, eq=False,
    frozen=frozen)`` writes it (taken from a class dataclasses processed: its constructor
    differs between Python versions); shared, since nothing changes it."""

    prototype: Any
    if frozen:  # dataclasses' frozen must be a literal for type checkers
        @dataclasses.dataclass(init=False, repr=False, eq=False, frozen=True)
        class Frozen:
            """Documented: else dataclasses asks ``inspect.signature`` for a docstring."""

        prototype = Frozen
    else:
        @dataclasses.dataclass(init=False, repr=False, eq=False, frozen=False)
        class Mutable:
            """Documented: else dataclasses asks ``inspect.signature`` for a docstring."""

        prototype = Mutable
    return prototype.__dataclass_params__


_PARAMS = {True: _params(True), False: _params(False)}
_NOT_PLAIN = ("ClassVar", "InitVar", "KW_ONLY")
"""Annotation texts dataclasses gives a meaning other than "a field"."""


def _plain_annotations(cls: type) -> dict[str, str] | None:
    """The annotations of ``cls`` when it is the plain case :func:`_collect_fields`
    handles (no base class, string annotations in its own namespace, none of them
    ``ClassVar``, ``InitVar`` or ``KW_ONLY``, no ``Field`` without an annotation), else
    ``None``."""
    if cls.__bases__ != (object,):
        return None
    own = cls.__dict__
    annotations: dict[str, str] | None = own.get("__annotations__")
    if not annotations:  # no fields, or annotations kept elsewhere (PEP 649): dataclasses
        return None
    # plain loops, no generators: this runs for every field of every record a scan imports
    for typ in annotations.values():
        if not isinstance(typ, str) or \
                _NOT_PLAIN[0] in typ or _NOT_PLAIN[1] in typ or _NOT_PLAIN[2] in typ:
            return None
    for k, v in own.items():
        if isinstance(v, dataclasses.Field) and k not in annotations:
            return None
    return annotations


def _collect_fields(cls: Any, frozen: bool) -> bool:
    """What ``dataclasses.dataclass(init=False, repr=False, eq=False)`` does to a plain
    class, done directly: the fields in annotation order (a :class:`dataclasses.Field` per
    annotation, from ``field(...)`` or the default value), class attributes holding a
    ``Field`` replaced by its default (or removed), a mutable default refused as
    dataclasses refuses it, ``__dataclass_fields__``, ``__dataclass_params__`` and
    ``__match_args__`` set.  dataclasses matches every string annotation against
    ``ClassVar``, ``InitVar`` and ``KW_ONLY`` in the module's namespace (three lookups a
    field: about half the cost of a record class).  Returns ``False``, changing nothing,
    for anything but the plain case (a base class, no annotations in the class's own
    namespace, such an annotation, a ``Field`` without annotation): dataclasses then
    processes the class."""
    annotations = _plain_annotations(cls)
    if annotations is None:
        return False
    own = cls.__dict__
    fields: dict[str, dataclasses.Field[Any]] = {}
    for name, typ in annotations.items():
        value = own.get(name, dataclasses.MISSING)
        # Any: its private attributes are set as dataclasses sets them
        f: Any = value if isinstance(value, dataclasses.Field) else \
            dataclasses.field(default=value)
        f.name, f.type = name, typ
        f._field_type = _FIELD
        if f.kw_only is dataclasses.MISSING:  # the decorator's kw_only=False
            f.kw_only = False
        if f.default is not dataclasses.MISSING and f.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not "
                             "allowed: use default_factory")
        fields[name] = f
    for name, f in fields.items():
        if isinstance(own.get(name), dataclasses.Field):
            if f.default is dataclasses.MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    cls.__dataclass_fields__ = fields
    cls.__dataclass_params__ = _PARAMS[frozen]
    if "__match_args__" not in own:
        # type checkers refuse any assignment to this name; the class is built here
        type.__setattr__(cls, "__match_args__", tuple([n for n, f in fields.items() if f.init]))
    return True


@overload
def record(cls: _T, /) -> _T: ...
@overload
def record(*, frozen: bool = True) -> Callable[[_T], _T]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: Any = None, /, *, frozen: bool = True) -> Any:
    """Class decorator: ``@record`` is ``@dataclass(frozen=True)``, ``@record(frozen=False)``
    is ``@dataclass``; see the module docstring for what is supported."""

    def wrap(cls: Any) -> Any:  # a class whose methods and dunders are set here
        undocumented = cls.__doc__ is None
        if undocumented:  # else dataclasses asks inspect.signature for one: ~3 ms, once
            cls.__doc__ = "record"  # any non-empty text: replaced below
        if not _collect_fields(cls, frozen):  # the general case: dataclasses decides
            cls = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
            cls.__dataclass_params__.frozen = frozen
        fields = [f for f in cls.__dataclass_fields__.values()
                  if f._field_type is _FIELD]
        why = _unsupported(cls, fields)
        if why:
            raise TypeError(f"@record does not support {why} (class {cls.__qualname__}); "
                            "use @dataclass")
        names = tuple([f.name for f in fields])  # comprehensions, not generators (cheaper)
        if undocumented:  # what dataclasses would have written, less the types
            cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
        cls._record_names = names
        # always a tuple, so equality and hash are exactly those of the field tuple
        cls._record_key = (operator.attrgetter(*names)
                           if len(names) > 1 else _single_key(names))
        cls.__init__ = _make_init(cls, fields)
        own = cls.__dict__
        if "__repr__" not in own:
            cls.__repr__ = _repr
        if "__eq__" not in own:
            cls.__eq__ = _eq
            # as dataclasses: frozen + eq -> hashable by value; mutable + eq -> unhashable
            cls.__hash__ = _hash if frozen else None
        if frozen:
            cls.__setattr__ = _frozen_setattr
            cls.__delattr__ = _frozen_delattr
        return cls

    return wrap if cls is None else wrap(cls)


if __name__ == "__main__":  # pragma: no cover - the generator of init_templates.py
    from pathlib import Path

    Path(__file__).with_name("init_templates.py").write_text(templates_module())
