"""The providers' public records are ordinary ``typing.NamedTuple``s and frozen dataclasses:
they pickle, compare, show their fields and resolve their annotations for introspection
(pydantic, ``typing.get_type_hints``). The transcript's records (``Section``, ``Run``,
``TornTail``) are classes of the extension: tests/test_records_named.py."""

from __future__ import annotations

import dataclasses
import pickle
import typing
from pathlib import Path

import pydantic
import pytest

from runcontext.providers import ClockProvider, Contribution, Diagnostic, Provider, base
from runcontext.providers.git import Head, Repository
from runcontext.providers.redact import Secret


@pytest.mark.parametrize(
    ("record", "fields"),
    [
        (Diagnostic("git", "error", "no HEAD"), ("provider", "kind", "message")),
        (Secret("github-token", 3, 43), ("kind", "start", "end")),
    ],
)
def test_the_named_tuples(record: typing.Any, fields: tuple[str, ...]) -> None:
    cls = type(record)
    assert cls._fields == fields and cls.__bases__ == (tuple,)
    assert pickle.loads(pickle.dumps(record)) == record
    shown = ", ".join(f"{field}={value!r}" for field, value in zip(fields, record, strict=True))
    assert repr(record) == f"{cls.__name__}({shown})"


@pytest.mark.parametrize(
    ("record", "fields"),
    [
        (
            Contribution(facts=(("d", "1"),), tail=(("t", "x"),), diagnostics=(("k", "m"),)),
            ("facts", "head", "tail", "diagnostics"),
        ),
        (
            Repository(Path("/r"), Path("/r/.git"), Path("/r/.git")),
            ("root", "git_dir", "common_dir"),
        ),
        (Head(branch="main", commit=None), ("branch", "commit")),
    ],
)
def test_the_frozen_dataclasses(record: typing.Any, fields: tuple[str, ...]) -> None:
    assert tuple(field.name for field in dataclasses.fields(record)) == fields
    assert pickle.loads(pickle.dumps(record)) == record
    assert dataclasses.replace(record) == record and hash(record) == hash(
        dataclasses.replace(record)
    )
    with pytest.raises(
        dataclasses.FrozenInstanceError, match=f"cannot assign to field '{fields[0]}'"
    ):
        setattr(record, fields[0], None)
    assert not hasattr(record, "__dict__")  # slots


def test_contribution_defaults_to_nothing() -> None:
    assert Contribution() == Contribution((), (), (), ())


def test_diagnostic_keeps_its_str() -> None:
    assert str(Diagnostic("git", "error", "no HEAD")) == "git: error: no HEAD"


def test_provider_is_the_protocol_of_runcontext_providers_base() -> None:
    import runcontext.providers as providers

    assert providers.Provider is base.Provider is Provider
    assert (Provider.__module__, Provider.__qualname__) == ("runcontext.providers.base", "Provider")
    assert isinstance(ClockProvider(), Provider) and not isinstance(object(), Provider)
    assert pickle.loads(pickle.dumps(Provider)) is Provider
    assert "Provider" in dir(providers)


def test_run_time_annotations_resolve_for_introspection() -> None:
    from runcontext.providers._workers import StillRunning

    assert typing.get_type_hints(Diagnostic) == {"provider": str, "kind": str, "message": str}
    assert typing.get_type_hints(Secret) == {"kind": str, "start": int, "end": int}
    assert typing.get_type_hints(StillRunning) == {"since": float}
    assert typing.get_type_hints(Head) == {"branch": str | None, "commit": str | None}
    assert typing.get_type_hints(Repository) == dict.fromkeys(
        ("root", "git_dir", "common_dir"), Path
    )
    assert typing.get_type_hints(Contribution)["facts"] == base.Pairs

    class Record(pydantic.BaseModel):
        diagnostic: Diagnostic

    record = Record(diagnostic=("git", "error", "no HEAD"))
    assert record.diagnostic == Diagnostic("git", "error", "no HEAD")
