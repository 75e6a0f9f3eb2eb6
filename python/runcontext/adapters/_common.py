"""What every adapter shares: the context texts and the checks on roles and arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from runcontext._checks import check_context
from runcontext._core import RunContext


def check_choice(argument: str, value: object, choices: tuple[str, ...]) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{argument}: expected a string, got {type(value).__name__}")
    if value not in choices:
        expected = " or ".join(repr(choice) for choice in choices)
        raise ValueError(f"{argument}: expected {expected}, got {value!r}")


def context_texts(context: RunContext | None) -> tuple[str | None, str | None]:
    context = check_context(context)
    if context is None:
        return None, None
    return context.head_text, context.tail_text


def check_roles(
    messages: Sequence[Mapping[str, Any]], roles: frozenset[str], argument: str, api: str
) -> None:
    try:  # one C-level pass in the common case; the slow scan only finds what to report
        if {message["role"] for message in messages} <= roles:
            return
    except TypeError:  # an unhashable role: the scan below names it
        pass
    for index, message in enumerate(messages):
        role = message["role"]
        if not isinstance(role, str) or role not in roles:
            bad_role(role, roles, f"{argument}[{index}]", api)


def bad_role(role: object, roles: frozenset[str], where: str, api: str) -> NoReturn:
    if not isinstance(role, str):
        raise TypeError(f"{where}.role: expected a string, got {type(role).__name__}")
    raise ValueError(
        f"{where}.role: {api} does not accept the role {role!r}; "
        f"expected one of {', '.join(sorted(roles))}"
    )
