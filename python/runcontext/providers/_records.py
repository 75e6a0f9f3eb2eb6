"""Frozen records written out by hand, where ``@dataclass(frozen=True, slots=True)`` stood.

``dataclasses`` imports ``inspect`` (and with it ast, dis and tokenize), which is about a
seventh of what ``runcontext show`` costs to start (issue 13). The records the providers
return (:class:`~runcontext.providers.Contribution`, ``git.Repository``, ``git.Head``)
therefore spell out what the decorator would have generated: the same ``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__match_args__``, slots, the frozen
``__setattr__``/``__delattr__`` (raising ``dataclasses.FrozenInstanceError``) and the
``__getstate__``/``__setstate__`` that make their pickles byte-identical. ``dataclasses``
itself still works on them: :class:`DataclassAttribute` builds ``__dataclass_fields__`` and
``__dataclass_params__`` on first access, from a real dataclass of the same fields, so
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` answer as before.
tests/test_records.py compares each record with the dataclass it replaces.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the import of typing is not needed here
if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["DataclassAttribute", "frozen"]


class DataclassAttribute:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a hand-written record.

    On first access, ``dataclasses.make_dataclass`` makes a frozen dataclass with the
    record's fields (names, annotations and defaults read from its ``__init__``), and the
    record takes that dataclass's attribute as its own: Field objects made by
    ``dataclasses`` itself, never imitated.
    """

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: object, owner: type) -> Any:
        import dataclasses

        init = vars(owner)["__init__"]
        names = init.__code__.co_varnames[1 : init.__code__.co_argcount]
        defaults = dict(zip(reversed(names), reversed(init.__defaults__ or ()), strict=False))
        fields = [
            (name, owner.__annotations__[name], dataclasses.field(default=defaults[name]))
            if name in defaults
            else (name, owner.__annotations__[name])
            for name in names
        ]
        twin = dataclasses.make_dataclass(owner.__name__, fields, frozen=True)
        for attribute in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(owner, attribute, getattr(twin, attribute))
        return getattr(owner, self.attribute)


def frozen(record: object, name: str, verb: str = "assign to") -> NoReturn:
    """Raise what a frozen dataclass raises on ``setattr``/``delattr`` of ``name``."""
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot {verb} field {name!r}")
