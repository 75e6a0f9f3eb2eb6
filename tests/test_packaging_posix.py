"""Without ``fcntl`` (Windows) transcripts refuse to import with one clear ImportError, and the
rest of the package still works: the wheel says POSIX in its classifiers for this reason."""

from __future__ import annotations

import subprocess
import sys

NO_FCNTL = "import sys; sys.modules['fcntl'] = None\n"


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_FCNTL + code], capture_output=True, text=True, check=False
    )


def test_transcripts_without_fcntl_raise_one_import_error_naming_flock() -> None:
    done = run(
        "try:\n"
        "    import runcontext.transcript.files\n"
        "except ImportError as error:\n"
        "    assert error.__cause__ is None and error.__suppress_context__, error\n"
        "    print(error)\n"
    )
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert message.startswith(
        "runcontext transcripts need POSIX file locking (fcntl.flock), which this platform "
        f"({sys.platform}) does not have"
    )
    assert "WSL" in message


def test_session_without_fcntl_is_the_same_error() -> None:
    done = run("import runcontext\nruncontext.Session\n")
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("ImportError: runcontext transcripts need POSIX file locking (fcntl.flock)")
    )


def test_runcontext_and_the_adapters_work_without_fcntl() -> None:
    done = run(
        "import runcontext\n"
        "from runcontext.adapters import openai_chat\n"
        "ctx = runcontext.RunContext(facts=[('date', '2026-12-01')])\n"
        "body = openai_chat([{'role': 'user', 'content': 'hi'}], ctx)\n"
        "print(len(body), ctx.digest[:7])\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1] == "blake3:"
