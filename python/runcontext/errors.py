"""Exceptions raised by runcontext.

Every canonical-JSON failure is a :class:`CanonicalJSONError` (a ``ValueError``); those that
are about a value's *type* are also ``TypeError``. Every invalid ``RunContext`` argument is a
:class:`RunContextError`, either :class:`RunContextTypeError` (``TypeError``) or
:class:`RunContextValueError` (``ValueError``). Messages say what was wrong, where, and how to
fix it; the location is also available as attributes.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CanonicalJSONError",
    "DuplicateKeyError",
    "InvalidNumberError",
    "InvalidStringError",
    "JSONSyntaxError",
    "NestingTooDeepError",
    "RunContextError",
    "RunContextTypeError",
    "RunContextValueError",
    "UnsupportedTypeError",
]


def _restore(cls: type[BaseException], message: str, attributes: dict[str, Any]) -> BaseException:
    """Rebuild a pickled or copied error without calling its ``__init__``.

    The errors take keyword-only arguments (and some rewrite the message), so the default
    ``BaseException`` reduction, ``cls(*args)``, cannot rebuild them: an error raised in a
    ``ProcessPoolExecutor`` worker would break the pool. Setting ``args`` and the attributes
    directly restores the error exactly as it was.
    """
    error = cls.__new__(cls, message)
    error.__dict__.update(attributes)
    return error


def _reduce(error: BaseException) -> tuple[Any, ...]:
    """The ``__reduce__`` shared by every runcontext error (see :func:`_restore`)."""
    message = error.args[0] if error.args else ""
    return (_restore, (type(error), message, dict(error.__dict__)))


class CanonicalJSONError(ValueError):
    """A value or JSON text that has no canonical (RFC 8785) form.

    ``kind`` names the rule broken (``duplicate-key``, ``non-finite``, ``trailing``, … as
    listed in ``docs/FORMAT.md``). ``path`` is the JSON path of the offending value
    (``$.messages[3].content``). For JSON text, ``line`` and ``column`` (1-based, in
    characters) and ``offset`` (in bytes) say where in the text; they are ``None`` for Python
    values.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "unknown",
        path: str = "$",
        line: int | None = None,
        column: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.path = path
        self.line = line
        self.column = column
        self.offset = offset

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduce(self)


class UnsupportedTypeError(CanonicalJSONError, TypeError):
    """A value of a type JSON cannot hold (bytes, set, datetime, …) or a non-str dict key."""


class InvalidNumberError(CanonicalJSONError):
    """NaN, ±Infinity, an integer outside ±(2**53 − 1), or a number too large for a double."""


class InvalidStringError(CanonicalJSONError):
    """Text that is not Unicode: a lone surrogate, or bytes that are not UTF-8."""


class NestingTooDeepError(CanonicalJSONError):
    """Arrays and objects nested deeper than ``runcontext.MAX_DEPTH``."""


class DuplicateKeyError(CanonicalJSONError):
    """Two object members with the same name (possible in JSON text, or via str subclasses)."""


class JSONSyntaxError(CanonicalJSONError):
    """JSON text that does not follow the JSON grammar."""


class RunContextError(Exception):
    """Arguments that do not make a valid RunContext.

    ``kind`` names the rule (as in ``docs/vectors/runcontext-v1.json``), ``argument`` the
    keyword (``facts``, ``head_sections``, ``tail_sections``) and ``index`` the entry, or
    ``None`` when the argument as a whole is wrong.
    """

    def __init__(self, message: str, *, kind: str, argument: str, index: int | None) -> None:
        super().__init__(message)
        self.kind = kind
        self.argument = argument
        self.index = index

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduce(self)


class RunContextTypeError(RunContextError, TypeError):
    """An argument or entry of the wrong type (a mapping, a bare pair, a non-str value, …)."""


class RunContextValueError(RunContextError, ValueError):
    """An entry of the right type with a wrong value (an invalid or duplicate name)."""
