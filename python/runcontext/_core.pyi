"""Type stubs for the Rust extension ``runcontext._core``."""

from collections.abc import Sequence
from typing import Any, final

from typing_extensions import Buffer

from runcontext.section import Section

__all__ = [
    "FORMAT_VERSION",
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "RunContext",
    "__version__",
    "canonical_json",
    "canonicalize_text",
    "digest",
    "digest_bytes",
]

__version__: str
MAX_DEPTH: int
MAX_ENTRIES: int
FORMAT_VERSION: int

def canonical_json(value: object, /) -> bytes: ...
def canonicalize_text(data: bytes | str, /) -> bytes: ...
def digest(value: object, /) -> str: ...
def digest_bytes(data: Buffer, /) -> str: ...

# Any sequence (not a set, mapping, iterator or generator) of two-item sequences.
_Pairs = Sequence[tuple[str, str | None] | Sequence[str | None]] | None

@final
class RunContext:
    def __new__(
        cls,
        *,
        head_sections: _Pairs = None,
        facts: _Pairs = None,
        tail_sections: _Pairs = None,
    ) -> RunContext: ...
    @property
    def head_text(self) -> str | None: ...
    @property
    def tail_text(self) -> str | None: ...
    @property
    def head_message(self) -> dict[str, Any] | None: ...
    @property
    def tail_message(self) -> dict[str, Any] | None: ...
    @property
    def digest(self) -> str: ...
    @property
    def sections(self) -> tuple[Section, ...]: ...
    @property
    def section_digests(self) -> tuple[str, ...]: ...
    @property
    def is_empty(self) -> bool: ...
    @property
    def facts(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def head_sections(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def tail_sections(self) -> tuple[tuple[str, str], ...]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, tuple[()]]: ...
