"""The contract's rows: each module here defines ``ROWS``, a mapping of names to
:class:`contract.Row` (see ``contract.py``)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from contract import Row


def all_rows() -> dict[str, Callable[[], Row]]:
    """Every row of every module in this package, by name. A row is built when a test uses it,
    so a framework that is missing fails (or, outside CI, skips) only its own rows."""
    rows: dict[str, Callable[[], Row]] = {}
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        found = importlib.import_module(f"{__name__}.{module.name}").ROWS
        duplicated = rows.keys() & found.keys()
        assert not duplicated, f"rows named twice: {sorted(duplicated)}"
        rows.update(found)
    return rows
