"""The records written out by hand behave as the ``@dataclass(frozen=True, slots=True)`` each
replaced (runcontext.providers._records): compared here with that dataclass itself."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from pathlib import Path
from typing import Any

import pytest

from runcontext.providers import Contribution
from runcontext.providers.git import Head, Repository

# Each record, the fields of the dataclass it was (name, default or MISSING), and arguments.
MISSING = dataclasses.MISSING
CASES: list[tuple[type, list[tuple[str, Any]], dict[str, Any]]] = [
    (
        Contribution,
        [("facts", ()), ("head", ()), ("tail", ()), ("diagnostics", ())],
        {"facts": [("d", "1")], "head": (), "tail": (("t", "x"),), "diagnostics": [("k", "m")]},
    ),
    (
        Repository,
        [("root", MISSING), ("git_dir", MISSING), ("common_dir", MISSING)],
        {"root": Path("/r"), "git_dir": Path("/r/.git"), "common_dir": Path("/r/.git")},
    ),
    (Head, [("branch", MISSING), ("commit", MISSING)], {"branch": "main", "commit": None}),
]


def twin(record: type, fields: list[tuple[str, Any]]) -> type:
    spec = [
        (name, Any) if default is MISSING else (name, Any, dataclasses.field(default=default))
        for name, default in fields
    ]
    return dataclasses.make_dataclass(record.__name__, spec, frozen=True, slots=True)


def same_class(value: object, cls: type) -> object:
    """``value`` (a reduce tuple) with ``cls`` replaced by a marker, to compare two classes'."""
    if value is cls:
        return "the class"
    if isinstance(value, tuple):
        return tuple(same_class(item, cls) for item in value)
    return value


@pytest.mark.parametrize(("record", "fields", "arguments"), CASES)
def test_a_record_behaves_as_its_dataclass(
    record: type, fields: list[tuple[str, Any]], arguments: dict[str, Any]
) -> None:
    dataclass = twin(record, fields)
    mine, theirs = record(**arguments), dataclass(**arguments)
    assert repr(mine) == repr(theirs)
    assert record(*arguments.values()) == mine and mine != theirs and mine != object()
    assert record.__slots__ == dataclass.__slots__
    assert record.__match_args__ == dataclass.__match_args__
    assert [(p.name, p.default, p.kind) for p in inspect.signature(record).parameters.values()] == [
        (p.name, p.default, p.kind) for p in inspect.signature(dataclass).parameters.values()
    ]
    hashable = {name: tuple(v) if isinstance(v, list) else v for name, v in arguments.items()}
    assert hash(record(**hashable)) == hash(dataclass(**hashable))
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        reduced, expected = mine.__reduce_ex__(protocol), theirs.__reduce_ex__(protocol)
        assert same_class(reduced, record) == same_class(expected, dataclass)
        assert pickle.loads(pickle.dumps(mine, protocol)) == mine
    assert copy.copy(mine) == mine and copy.deepcopy(mine) == mine
    frozen = dataclasses.FrozenInstanceError
    for name, _ in fields:
        with pytest.raises(frozen, match=f"cannot assign to field '{name}'"):
            setattr(mine, name, None)
        with pytest.raises(frozen, match=f"cannot delete field '{name}'"):
            delattr(mine, name)
    # dataclasses' own functions see the same fields.
    assert dataclasses.is_dataclass(mine) and dataclasses.is_dataclass(record)
    assert [(f.name, f.default) for f in dataclasses.fields(mine)] == fields
    assert dataclasses.asdict(mine) == dataclasses.asdict(theirs)
    first = fields[0][0]
    assert dataclasses.replace(mine, **{first: None}) == record(**{**arguments, first: None})
    assert record.__dataclass_params__.frozen
