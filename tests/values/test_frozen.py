"""The quicker __init__ of frozen dataclasses: the same objects as the dataclass's own, made the same way."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import InitVar, dataclass, field
from typing import ClassVar

import pytest

from autoscaler.values.frozen import quick_init


@dataclass(frozen=True, slots=True)
class Plain:
    name: str
    count: int = 3
    tags: tuple[str, ...] = field(default_factory=tuple)
    seen: list[int] = field(default_factory=list)
    note: str | None = field(default=None, kw_only=True)
    shared: ClassVar[int] = 7


@quick_init
@dataclass(frozen=True, slots=True)
class Quick:
    name: str
    count: int = 3
    tags: tuple[str, ...] = field(default_factory=tuple)
    seen: list[int] = field(default_factory=list)
    note: str | None = field(default=None, kw_only=True)
    shared: ClassVar[int] = 7


@quick_init
@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int


@dataclass(frozen=True, slots=True)
class PlainPoint:
    x: int
    y: int


def as_plain(quick: Quick) -> Plain:
    return Plain(quick.name, quick.count, quick.tags, quick.seen, note=quick.note)


def test_the_quicker_init_takes_the_same_arguments_and_makes_the_same_object() -> None:
    calls = [
        (("web",), {}),
        (("web", 5), {}),
        (("web", 5, ("a",)), {"note": "n"}),
        ((), {"name": "web", "seen": [1], "count": 0}),
    ]
    for args, kwargs in calls:
        quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)
        assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
        assert repr(quick).replace("Quick", "Plain") == repr(plain)
    for args, kwargs in [((), {}), (("a", 1, (), [], "note"), {}), (("a",), {"colour": 1})]:
        with pytest.raises(TypeError) as quick_error:
            Quick(*args, **kwargs)
        with pytest.raises(TypeError) as plain_error:
            Plain(*args, **kwargs)
        assert str(quick_error.value).replace("Quick", "Plain") == str(plain_error.value)


def test_what_the_dataclass_gives_still_holds() -> None:
    one = Quick("web", 5)
    assert one == Quick("web", 5) and one != Quick("web", 6)
    for unhashable in (one, as_plain(one)):  # a list in it, as in the dataclass's own
        with pytest.raises(TypeError):
            hash(unhashable)
    assert hash(Point(1, 2)) == hash(Point(1, 2)) == hash(PlainPoint(1, 2)) and {Point(1, 2), Point(1, 2)} == {
        Point(1, 2)
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.count = 6  # type: ignore[misc]
    assert dataclasses.replace(one, count=6) == Quick("web", 6)
    assert pickle.loads(pickle.dumps(one)) == one
    assert Quick("a").seen is not Quick("a").seen  # a factory's default is made per object
    assert as_plain(Quick("a", note="x")) == Plain("a", note="x")
    assert not hasattr(one, "__dict__") and Quick.shared == 7


def test_a_class_it_cannot_speed_up_is_refused() -> None:
    @dataclass(slots=True)
    class Thawed:
        name: str

    @dataclass(frozen=True)
    class Unslotted:
        name: str

    @dataclass(frozen=True, slots=True)
    class Checked:
        name: str

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class Derived:
        name: str
        scale: InitVar[int] = 1

    @dataclass(frozen=True, slots=True)
    class Hidden:
        name: str
        cached: int = field(default=0, init=False)

    for cls in (Thawed, Unslotted, Checked, Derived, Hidden):
        with pytest.raises(TypeError):
            quick_init(cls)
