"""An error as the command line reports it: one line, in the command line's terms.

The library's messages advise a program (``Session.create(path, messages)``, ``session_id=``,
``max_line_bytes=``), and ``str()`` of an ``OSError`` starts with ``[Errno 2]``. A person at the
command line needs the flag to pass or nothing: :func:`message` says the same thing with the
command's flags, drops advice that only a program can follow, and names a file the way a shell
user reads it (``no such file: t.jsonl``). docs/TRANSCRIPT.md (*runcontext log*) states the rule.
"""

from __future__ import annotations

import os
import re

__all__ = ["message"]

# Library advice, and what the command line says instead ("" drops it: there is no command for
# it, and the rest of the message already says what is wrong).
_ADVICE = (
    ("No such file: ", "no such file: "),
    ("; start a transcript with Session.create(path, messages)", ""),
    (" (create one with Session.create)", ""),
    (" (start one with Session.create)", ""),
    ("; open it with Session.open(path) to resume it, or choose another path", ""),
    (" (open it with Session.open, or pick another id)", ""),
    (
        "pass session_id= or add ?session=ID to the DSN",
        "pass --session ID or add ?session=ID to the URI",
    ),
    ("the DSN's", "the URI's"),
    (
        "session_id and tenant are for a PostgreSQL store",
        "--session and --tenant are for a PostgreSQL URI",
    ),
    (
        "give a larger max_line_bytes= to Session.create or Session.open (and to every reader: "
        "Session.open, runcontext log --max-line-bytes)",
        "pass a larger --max-line-bytes N",
    ),
    ("read it with a larger max_line_bytes", "read it with a larger --max-line-bytes N"),
)
# An argument named as a program passes it (`session_id='a'`), and the flag that passes it; not
# a URI's query parameter (`&tenant=1`, "the URI's tenant='c'").
_ARGUMENTS = re.compile(r"(?<![?&])(?<!'s )\b(session_id|tenant|max_line_bytes)=(?=['\"\d])")
_FLAGS = {"session_id": "--session ", "tenant": "--tenant ", "max_line_bytes": "--max-line-bytes "}
# What an OSError's default text says, as a shell user reads it before the file's name.
_PHRASES = {"No such file or directory": "no such file"}


def message(error: BaseException) -> str:
    """``error`` as one line for ``runcontext COMMAND: …`` (before terminal escaping)."""
    text = _os_error(error) if isinstance(error, OSError) else str(error)
    for library, command_line in _ADVICE:
        text = text.replace(library, command_line)
    return _ARGUMENTS.sub(lambda match: _FLAGS[match.group(1)], text)


def _os_error(error: OSError) -> str:
    """An ``OSError`` without its ``[Errno N]``: the message the library wrote, with the file's
    name where it is not in it already, or the system's text as ``no such file: NAME``."""
    if error.strerror is None:
        return str(error)
    name = error.filename if error.filename is None else os.fsdecode(error.filename)
    if error.errno is not None and error.strerror == os.strerror(error.errno):
        if name is None:
            return error.strerror
        phrase = _PHRASES.get(error.strerror)
        return f"{phrase}: {name}" if phrase else f"{name}: {error.strerror.lower()}"
    if name is None or name in error.strerror:
        return error.strerror
    return f"{name}: {error.strerror}"
