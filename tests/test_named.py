"""runcontext._named.NamedTuple makes the class typing.NamedTuple makes: the public named
tuples (Section, Diagnostic, redact.Secret) answer as they did when they were typing's."""

from __future__ import annotations

import pickle
import sys
import typing

import pytest

from runcontext._named import NamedTuple
from runcontext.providers import Diagnostic
from runcontext.providers.redact import Secret


def _pair(base: typing.Any) -> typing.Any:
    class Record(base):  # type: ignore[misc,valid-type]
        """A record."""

        name: str
        size: int = 0
        tag: str = "t"

        def __str__(self) -> str:
            return f"{self.name}/{self.size}"

    return Record


OURS, THEIRS = _pair(NamedTuple), _pair(typing.NamedTuple)


def test_the_class_is_the_one_typing_makes() -> None:
    assert OURS.__mro__[1:] == THEIRS.__mro__[1:] == (tuple, object)
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__", "_fields"):
        assert getattr(OURS, attribute) == getattr(THEIRS, attribute)
    assert OURS._field_defaults == THEIRS._field_defaults == {"size": 0, "tag": "t"}
    assert list(OURS.__annotations__) == list(THEIRS.__annotations__) == list(OURS._fields)
    assert set(vars(OURS)) == set(vars(THEIRS)) - {"__orig_bases__"}
    ours, theirs = OURS("a", 2), THEIRS("a", 2)
    assert (repr(ours), str(ours), ours._asdict()) == (repr(theirs), str(theirs), theirs._asdict())
    assert ours == theirs == ("a", 2, "t") and ours._replace(size=3) == ("a", 3, "t")


def test_the_same_refusals() -> None:
    for base in (NamedTuple, typing.NamedTuple):
        with pytest.raises(TypeError, match="Non-default namedtuple field b cannot follow"):

            class Defaults(base):  # type: ignore[misc,valid-type]
                a: int = 0
                b: int

        with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _make"):

            class Overwrite(base):  # type: ignore[misc,valid-type]
                a: int

                def _make(self) -> None: ...

        with pytest.raises(ValueError, match="Field names cannot start with an underscore"):

            class Underscore(base):  # type: ignore[misc,valid-type]
                _a: int


@pytest.mark.parametrize(
    ("record", "fields"),
    [
        (Diagnostic("git", "error", "no HEAD"), ("provider", "kind", "message")),
        (Secret("github-token", 3, 43), ("kind", "start", "end")),
    ],
)
def test_the_public_records(record: typing.Any, fields: tuple[str, ...]) -> None:
    cls = type(record)
    assert cls._fields == fields and cls.__bases__ == (tuple,)
    assert cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "(")  # the docstring
    assert pickle.loads(pickle.dumps(record)) == record
    shown = ", ".join(f"{field}={value!r}" for field, value in zip(fields, record, strict=True))
    assert repr(record) == f"{cls.__name__}({shown})"
    # The annotations are strings: typing's names resolve with the module's.
    assert typing.get_type_hints(cls, {**vars(typing), **vars(sys.modules[cls.__module__])})


def test_diagnostic_keeps_its_str() -> None:
    assert str(Diagnostic("git", "error", "no HEAD")) == "git: error: no HEAD"


def test_provider_loads_on_first_use() -> None:
    import runcontext.providers as providers
    from runcontext.providers import ClockProvider, Provider, base

    assert providers.Provider is base.Provider is Provider
    assert (Provider.__module__, Provider.__qualname__) == ("runcontext.providers.base", "Provider")
    assert isinstance(ClockProvider(), Provider) and not isinstance(object(), Provider)
    assert pickle.loads(pickle.dumps(Provider)) is Provider
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        providers.Nothing  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        base.Nothing  # noqa: B018


def test_run_time_annotations_resolve_for_introspection() -> None:
    # typing.get_type_hints and pydantic evaluate the annotations in the defining module,
    # which imports no typing names at run time: each must resolve there.
    import typing

    import pydantic

    from runcontext.providers._workers import StillRunning
    from runcontext.providers.base import Diagnostic
    from runcontext.providers.redact import Secret

    assert typing.get_type_hints(Diagnostic) == {"provider": str, "kind": str, "message": str}
    assert typing.get_type_hints(Secret) == {"kind": str, "start": int, "end": int}
    assert typing.get_type_hints(StillRunning) == {"since": float}

    class Record(pydantic.BaseModel):
        diagnostic: Diagnostic

    record = Record(diagnostic=("git", "error", "no HEAD"))
    assert record.diagnostic == Diagnostic("git", "error", "no HEAD")


def test_provider_is_listed_before_first_use() -> None:
    import subprocess

    code = "import runcontext.providers as p; print('Provider' in dir(p))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout == "True\n"
