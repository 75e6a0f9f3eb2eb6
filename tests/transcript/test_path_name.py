"""A file store names its file as ``pathlib.Path`` prints it, however the path was given (a
str with doubled slashes or ``.`` components, a Path), and error messages, ``Session.path``
and the core's messages use that name. pathlib itself is the oracle."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from runcontext.transcript import Session, TranscriptFormatError
from runcontext.transcript.files import FileStore

# Paths made of the characters Path treats specially (separators, dots) and a few others.
paths = st.text(alphabet="/.a-", max_size=12)


@given(paths)
def test_a_path_object_or_a_string_name_the_same_file(text: str) -> None:
    store = FileStore(Path(text))
    assert store.name == FileStore(text).name == str(Path(text))
    assert store.path == Path(text)


def test_session_path_and_messages_name_the_file_as_path_prints_it(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    with Session.create(target, [{"role": "user", "content": "hi"}]):
        pass
    given = f"{tmp_path}//./t.jsonl"
    with Session.open(given) as session:
        assert session.path == target and isinstance(session.path, Path)
        assert session.store.name == str(target)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    try:
        Session.open(f"{tmp_path}/./empty.jsonl")
    except TranscriptFormatError as error:
        assert str(error).startswith(f"{tmp_path / 'empty.jsonl'}:1: no header record")
        assert error.file == str(tmp_path / "empty.jsonl")
    else:
        raise AssertionError("an empty file was accepted")
