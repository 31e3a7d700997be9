"""``@record`` behaves as ``@dataclass(frozen=True)`` / ``@dataclass`` (the oracle here)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.startup.records import record


@record
class Point:
    """A frozen record."""

    x: int
    y: str = "y"
    tags: tuple[str, ...] = ()
    meta: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class PointDC:
    """The same class as a real frozen dataclass."""

    x: int
    y: str = "y"
    tags: tuple[str, ...] = ()
    meta: dict[str, int] = dataclasses.field(default_factory=dict)


@record(frozen=False)
class Bag:
    """A mutable record."""

    items: list[int] = dataclasses.field(default_factory=list)


@record
class Empty:
    """No fields at all."""


@record
class One:
    """One field: equality and hash are still those of a 1-tuple."""

    v: float


values = st.tuples(st.integers(), st.text(max_size=5), st.tuples(st.text(max_size=3)))


@given(values, values)
def test_equality_hash_and_repr_match_dataclass(a: tuple, b: tuple) -> None:
    ra, rb = Point(*a), Point(*b)
    da, db = PointDC(*a), PointDC(*b)
    assert (ra == rb) == (da == db)
    assert (ra != rb) == (da != db)
    assert repr(ra) == repr(da).replace("PointDC", "Point")
    for unhashable in (ra, da):  # a dict field: unhashable in both
        with pytest.raises(TypeError):
            hash(unhashable)
    assert hash(One(a[0])) == hash(One(a[0])) == hash((a[0],))
    assert dataclasses.astuple(ra) == dataclasses.astuple(da)


def test_dataclasses_api_works() -> None:
    p = Point(1, tags=("a",))
    assert dataclasses.is_dataclass(p)
    assert [f.name for f in dataclasses.fields(p)] == ["x", "y", "tags", "meta"]
    assert dataclasses.replace(p, y="z") == Point(1, "z", ("a",))
    assert dataclasses.asdict(p) == {"x": 1, "y": "y", "tags": ("a",), "meta": {}}
    assert Point.__match_args__ == ("x", "y", "tags", "meta")
    match p:
        case Point(1, "y"):
            pass
        case _:
            pytest.fail("match_args do not work")


def test_default_factory_gives_a_fresh_value_each_time() -> None:
    a, b = Point(1), Point(1)
    assert a.meta == {} and a.meta is not b.meta
    assert Bag().items is not Bag().items
    assert Point(1, meta={"k": 1}).meta == {"k": 1}


def test_frozen_and_mutable() -> None:
    p = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x  # type: ignore[misc]
    bag = Bag()
    bag.items = [1]
    assert bag == Bag([1]) and bag != Bag()
    with pytest.raises(TypeError):
        hash(bag)  # mutable with eq: unhashable, as a dataclass


def test_equality_is_per_class_and_tuple_exact() -> None:
    assert Point(1) != PointDC(1)
    assert Point(1) != (1, "y", (), {})
    assert Empty() == Empty() and hash(Empty()) == hash(())
    nan = float("nan")
    one = One(nan)
    assert one == one and hash(One(1.0)) == hash((1.0,))  # tuple identity shortcut kept


def test_copy_and_pickle() -> None:
    p = Point(3, "q", ("t",), {"a": 1})
    assert copy.copy(p) == p and copy.deepcopy(p) == p
    assert pickle.loads(pickle.dumps(p)) == p


def test_signature_errors_as_python_does() -> None:
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, x=2)  # type: ignore[misc]


@pytest.mark.parametrize("body", [
    "a: int = 0\n    b: int",
    "a: int = dataclasses.field(default=0, init=False)",
    "a: int = dataclasses.field(default=0, compare=False)",
    "a: int\n    def __post_init__(self): pass",
])
def test_unsupported_options_are_refused(body: str) -> None:
    src = f"@record\nclass Bad:\n    {body}\n"
    with pytest.raises(TypeError):
        exec(src, {"record": record, "dataclasses": dataclasses})


kinds = st.lists(st.sampled_from("rdf"), max_size=6).map(
    lambda ks: sorted(ks, key=lambda k: k != "r"))  # required fields first, as Python needs


@given(kinds, st.data())
def test_init_from_a_template_matches_dataclass_init(shape: list[str], data) -> None:
    """Any shape of fields: the same signature, and the same values set, as @dataclass."""
    import inspect

    names = [f"n{i}_{k}" for i, k in enumerate(shape)]
    body = "".join(
        f"    {n}: int\n" if k == "r" else
        f"    {n}: int = {i * 10}\n" if k == "d" else
        f"    {n}: list = dataclasses.field(default_factory=lambda: [{i}])\n"
        for i, (n, k) in enumerate(zip(names, shape, strict=True))) or "    pass\n"
    ns: dict = {"record": record, "dataclasses": dataclasses}
    exec(f"@record\nclass R:\n{body}\n"
         f"@dataclasses.dataclass(frozen=True)\nclass D:\n{body}", ns)
    R, D = ns["R"], ns["D"]
    assert str(inspect.signature(R)) == str(inspect.signature(D))

    def described(cls: type) -> list[tuple]:
        return [(f.name, f.type, f.default, f.default_factory is dataclasses.MISSING or
                 f.default_factory(), f.init, f.repr, f.hash,
                 f.compare, f.metadata, f.kw_only, f._field_type)
                for f in cls.__dataclass_fields__.values()]
    # the fields are collected without dataclasses: the same Field objects it would build
    assert described(R) == described(D)
    assert R.__match_args__ == D.__match_args__
    assert R.__dataclass_params__.frozen and dataclasses.is_dataclass(R)
    assert {n: getattr(R, n, None) for n in names} == {n: getattr(D, n, None) for n in names}
    required = [n for n, k in zip(names, shape, strict=True) if k == "r"]
    n_pos = data.draw(st.integers(0, len(names)))
    args = [data.draw(st.integers()) for _ in range(max(n_pos, len(required)))]
    r, d = R(*args), D(*args)
    assert dataclasses.astuple(r) == dataclasses.astuple(d)
    kw = {n: i for i, n in enumerate(names)}
    assert dataclasses.asdict(R(**kw)) == dataclasses.asdict(D(**kw))
    assert R.__init__.__qualname__.endswith("R.__init__")
    if any(k == "f" for k in shape):
        a, b = R(*args[:len(required)]), R(*args[:len(required)])
        fac = next(n for n, k in zip(names, shape, strict=True) if k == "f")
        assert getattr(a, fac) == getattr(b, fac) and getattr(a, fac) is not getattr(b, fac)


def test_an_undocumented_record_gets_a_signature_docstring() -> None:
    @record
    class Bare:
        a: int
        b: str = ""

    assert Bare.__doc__ == "Bare(a, b)"
    assert Point.__doc__ == "A frozen record."


def test_init_templates_module_is_generated_and_used() -> None:
    """``init_templates.py`` is what the generator writes (regenerate with ``python -m
    aiaudit.core.startup.records``), and a record's ``__init__`` is built from it: named
    ``__init__`` in tracebacks, with the class's field names."""
    import inspect

    from aiaudit.core.startup import init_templates, records

    assert inspect.getsource(init_templates) == records.templates_module()

    @records.record
    class Three:
        a: int
        b: str = "x"
        c: tuple[int, ...] = ()

    code = Three.__init__.__code__
    assert code.co_name == "__init__" and code.co_varnames[:4] == ("self", "a", "b", "c")
    assert code.co_filename == init_templates.__file__
    assert Three(1) == Three(1, "x", ()) and Three(a=2, c=(1,)).c == (1,)


def test_a_record_wider_than_the_templates_is_compiled() -> None:
    from aiaudit.core.startup import records

    n = records.TEMPLATES_MAX + 2
    ns: dict[str, object] = {"__annotations__": {f"f{i}": "int" for i in range(n)}}
    cls = records.record(type("Wide", (), ns))
    obj = cls(*range(n))
    assert getattr(obj, f"f{n - 1}") == n - 1
    assert cls.__init__.__code__.co_filename == "<string>"
