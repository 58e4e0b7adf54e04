"""``memstore import --timeline``: a transcript file through ns.timeline.ingest_turns.

The transcript and the printed line are docs/cli.md's ("Transcripts"): the
docs stay true.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from memstore import MemoryStore
from memstore.embedding import HashingEmbedder
from tests.conftest import row_counts

MEMSTORE = str(Path(sys.executable).with_name("memstore"))
DOCS = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
SECTION = DOCS[DOCS.index("**Transcripts.**") :]
TRANSCRIPT = re.findall(r"```jsonl\n(.*?)```", SECTION, flags=re.DOTALL)[0]
PRINTED = re.findall(
    r"```bash\nmemstore import --timeline chat.jsonl -n assistant\n# (.*?)\n", SECTION
)[0]


def run(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    env.update(MEMSTORE_DATABASE_URL=url, MEMSTORE_EMBEDDER="hashing", COLUMNS="300")
    return subprocess.run([MEMSTORE, *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_documented_transcript_imports_once(database_url: str, tmp_path: Path):
    path = tmp_path / "chat.jsonl"
    lines = TRANSCRIPT.splitlines()
    path.write_text("\n".join([lines[0], "", *lines[1:]]) + "\n")  # a blank line is skipped
    done = run(database_url, "import", "--timeline", str(path), "-n", "assistant")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == PRINTED
    again = run(database_url, "import", "--timeline", str(path), "-n", "assistant", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {
        "turns": 4, "created": 0, "existing": 4, "linked": 0, "sessions": 2,
    }  # fmt: skip
    with MemoryStore.open(database_url, embedder=HashingEmbedder()) as store:
        trip = store.namespace("assistant").timeline.recent(10, session_id="trip")
    assert [t.content for t in trip] == [
        "user: And the ferry back?",
        "assistant: At 10:15 from pier 3.",
        "user: When does the harbour ferry leave?",
    ]


def test_a_bad_line_names_itself_and_writes_nothing(database_url: str, tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    for bad, words in (
        ('{"role": "user", "content": "hi"}', "bad.jsonl:3: session_id"),
        ('["user", "hi", "s"]', "bad.jsonl:3 is not a JSON object"),
        ('{"role": "user", "content": "hi", "session_id": "s", "at": "yesterday"}', "at"),
        ('{"role": "user", "content": "  ", "session_id": "s"}', "bad.jsonl:3: content is empty"),
        ('{"role": "user", "content": "hi", "session_id": "s", "who": 1}', "who"),
    ):
        path.write_text(TRANSCRIPT.splitlines()[0] + "\n\n" + bad + "\n")
        before = row_counts(database_url)
        done = run(database_url, "import", "--timeline", str(path), "-n", "cli-turns-bad")
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
        assert row_counts(database_url) == before
