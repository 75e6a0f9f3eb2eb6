"""The :class:`Section` record of a rendered RunContext."""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["Section"]


class Section(NamedTuple):
    """A kept section: where it renders, its name, its normalised text and its digest.

    ``digest`` is ``runcontext.digest({"name": name, "text": text})``: a transcript stores a
    section body once under it, however many runs repeat it.
    """

    position: Literal["head", "tail"]
    name: str
    text: str
    digest: str
