"""The :class:`Section` record of a rendered RunContext."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: `runcontext show` starts without importing typing
if TYPE_CHECKING:
    from typing import Literal, NamedTuple
else:
    from runcontext._named import NamedTuple

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


if not TYPE_CHECKING:
    # Run-time annotations must resolve in this module (typing.get_type_hints, and pydantic
    # models with a Section field, evaluate them here), and `Literal` would need typing,
    # which this module does not import: at run time the position is annotated `str`.
    Section.__annotations__["position"] = Section.__new__.__annotations__["position"] = "str"
