"""Every command that reads a file answers a bad one with one line on stderr, never a traceback.

Commands × cases: a missing file, a directory, bytes that are not UTF-8, an
empty (or blank) file, JSON nested 100,000 levels deep (Python's parser raises
RecursionError on it), and for ``apply`` a file over its size limit. Each run
must exit non-zero with exactly one ``error: ...`` line on stderr, no
traceback, and leave every memstore table as it was. The installed command runs
in a subprocess, as in tests/acceptance/test_cli.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memstore.cli.lifecycle import APPLY_MAX_BYTES
from tests.conftest import row_counts

MEMSTORE = str(Path(sys.executable).with_name("memstore"))
NESTED = b"[" * 100_000

# A case writes what the command reads into tmp_path and returns the argument
# naming it, with the words the one error line must contain.
Case = Callable[[Path, str], str]


def missing(tmp: Path, suffix: str) -> str:
    return str(tmp / f"nowhere{suffix}")


def directory(tmp: Path, suffix: str) -> str:
    folder = tmp / f"folder{suffix}"
    folder.mkdir()
    return str(folder)


def _file(content: bytes) -> Case:
    def make(tmp: Path, suffix: str) -> str:
        path = tmp / f"input{suffix}"
        path.write_bytes(content)
        return str(path)

    return make


def oversized(tmp: Path, suffix: str) -> str:
    path = tmp / f"huge{suffix}"
    with path.open("wb") as f:
        f.truncate(APPLY_MAX_BYTES + 1)  # sparse: the size is what is refused
    return str(path)


CASES: dict[str, tuple[Case, str]] = {
    "missing": (missing, "no such file"),
    "directory": (directory, "is a directory"),
    "not UTF-8": (_file(b'[{"op": "remember", "content": "caf\xe9 \xff"}]\n'), "not UTF-8"),
    "empty": (_file(b""), "is empty"),
    "blank": (_file(b" \n\t\n"), "is empty"),
    "nested 100k": (_file(NESTED), "nested too deeply"),
}
# command (with the suffix of the file it reads) -> the cases that apply to it
COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "apply": (("apply", "--phase", "wake"), ".json"),
    "import jsonl": (("import",), ".jsonl"),
    "import text": (("import",), ".txt"),
    "import timeline": (("import", "--timeline"), ".jsonl"),
}
# Nesting is only a JSON problem: a text import stores lines as they are (and a
# line of 100,000 '[' is refused as content over the limit, also in one line).
MATRIX = [
    pytest.param(command, case, id=f"{command}-{case}")
    for command in COMMANDS
    for case in CASES
    if not (command == "import text" and case == "nested 100k")
] + [pytest.param("apply", "oversized", id="apply-oversized")]


def run(url: str, args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env.update(MEMSTORE_DATABASE_URL=url, MEMSTORE_EMBEDDER="hashing", COLUMNS="300")
    return subprocess.run([MEMSTORE, *args], input=stdin, capture_output=True, env=env, timeout=300)


def assert_one_clean_line(done: subprocess.CompletedProcess[bytes], *words: str) -> None:
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode != 0, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    for word in words:
        assert word in lines[0], stderr


@pytest.mark.parametrize(("command", "case"), MATRIX)
def test_a_bad_file_gets_one_line_and_writes_nothing(
    database_url: str, tmp_path: Path, command: str, case: str
):
    args, suffix = COMMANDS[command]
    make, words = CASES[case] if case in CASES else (oversized, "larger than")
    source = make(tmp_path, suffix)
    before = row_counts(database_url)
    done = run(database_url, [*args, source, "-n", "cli-files"])
    assert_one_clean_line(done, words)
    assert row_counts(database_url) == before


@pytest.mark.parametrize(
    ("content", "words"),
    [
        pytest.param(b"\xff\xfe not utf-8", "not UTF-8", id="not UTF-8"),
        pytest.param(b"", "is empty", id="empty"),
        pytest.param(NESTED, "nested too deeply", id="nested 100k"),
        pytest.param(b'[{"op": ', "not JSON", id="truncated"),
    ],
)
def test_apply_from_stdin_gets_one_line_and_writes_nothing(
    database_url: str, content: bytes, words: str
):
    before = row_counts(database_url)
    done = run(database_url, ["apply", "-", "-n", "cli-files"], stdin=content)
    assert_one_clean_line(done, "stdin", words)
    assert row_counts(database_url) == before


def test_procedure_steps_nested_too_deeply_get_one_line(database_url: str):
    before = row_counts(database_url)
    done = run(
        database_url,
        ["procedures", "add", "deploy", "--steps", NESTED.decode(), "-n", "cli-files"],
    )
    assert_one_clean_line(done, "--steps", "nested too deeply")
    assert row_counts(database_url) == before


def test_a_good_file_still_imports(database_url: str, tmp_path: Path):
    # With a byte order mark and a blank line: both are fine.
    path = tmp_path / "good.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"content": "first"}\n\n{"content": "second", "data": {"n": 2}}\n'
    )
    done = run(database_url, ["import", str(path), "-n", "cli-files-good", "--json"])
    assert done.returncode == 0, done.stderr.decode()
    assert len(done.stdout.decode().strip().strip("[]").split(",")) == 2
