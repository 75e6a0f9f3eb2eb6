"""The :class:`Section` record of a rendered RunContext (defined in the extension)."""

from runcontext._core import Section

__all__ = ["Section"]
