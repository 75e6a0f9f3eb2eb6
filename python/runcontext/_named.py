"""``typing.NamedTuple``'s class syntax without importing ``typing``.

Importing ``typing`` was a seventh of what ``runcontext show`` cost to start (issue 13),
and the named tuples on its path (``Section``, ``Diagnostic``, ``redact.Secret``) were its
last use at run time. ``class X(NamedTuple)`` here makes the class ``typing`` would: it
calls ``collections.namedtuple`` with the annotated fields, their defaults and the module,
and copies the body's docstring, qualname and methods onto it, with the same refusals
(``_fields``, ``_make``, ``__new__``, … cannot be overridden). Two differences: the
annotations stay the strings ``from __future__ import annotations`` left, where ``typing``
would wrap each in a ``ForwardRef``, and there is no ``__orig_bases__`` naming typing's
function. Modules import it under ``if not TYPE_CHECKING``, so
type checkers see ``typing.NamedTuple`` itself.
"""

from __future__ import annotations

import collections  # already imported at start-up (functools, re and enum need it)

TYPE_CHECKING = False  # not typing's, which is what this module avoids
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NamedTuple"]

# What typing.NamedTuple leaves alone, and what it refuses to let a class body replace.
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})
_PROHIBITED = frozenset(
    {
        "__new__",
        "__init__",
        "__slots__",
        "__getnewargs__",
        "_fields",
        "_field_defaults",
        "_make",
        "_replace",
        "_asdict",
        "_source",
    }
)

# mypy takes a namedtuple() call for a class definition, whose names must be literals.
_namedtuple: Any = collections.namedtuple


class _NamedTupleMeta(type):
    def __new__(cls, typename: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        if bases != (NamedTuple,):
            raise TypeError("can only inherit from a NamedTuple type and Generic")
        annotations: dict[str, Any] = namespace.get("__annotations__", {})
        defaults: list[str] = []
        for field in annotations:
            if field in namespace:
                defaults.append(field)
            elif defaults:
                raise TypeError(
                    f"Non-default namedtuple field {field} cannot follow default field"
                    f"{'s' if len(defaults) > 1 else ''} {', '.join(defaults)}"
                )
        record = _namedtuple(
            typename,
            list(annotations),
            defaults=[namespace[field] for field in defaults],
            module=namespace["__module__"],
        )
        record.__annotations__ = record.__new__.__annotations__ = dict(annotations)
        for key, value in namespace.items():
            if key in _PROHIBITED:
                raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
            if key not in _SPECIAL and key not in record._fields:
                setattr(record, key, value)
        return record


# The base a class statement names; like typing's _NamedTuple, it is never a real base.
NamedTuple = type.__new__(_NamedTupleMeta, "NamedTuple", (), {"__module__": __name__})
