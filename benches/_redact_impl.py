"""Load ``redact()`` from this package or, to compare revisions, from another file."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections import Counter
from collections.abc import Callable
from typing import cast

Redact = Callable[[str], tuple[str, Counter[str]]]


def load(path: str | None) -> tuple[str, Redact]:
    """(revision, redact) of the installed module, or of the module file at ``path``.

    ``path`` may be a pipe: ``--compare <(git show REV:python/runcontext/providers/redact.py)``.
    """
    if path is None:
        from runcontext.providers import redact as module

        return module.REVISION, module.redact
    loader = importlib.machinery.SourceFileLoader("redact_compared", path)
    spec = importlib.util.spec_from_loader("redact_compared", loader)
    assert spec is not None
    compared = importlib.util.module_from_spec(spec)
    loader.exec_module(compared)
    return cast(str, compared.REVISION), cast(Redact, compared.redact)
