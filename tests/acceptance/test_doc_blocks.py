"""Every code block in README.md and docs/*.md runs as written (issue 21 item 8).

Each fenced block is classified by its language, or by a marker on the line
right before it (``<!-- doc-test: KIND ARG -->``), or by a marker for all the
blocks of one language in a page (``<!-- doc-test-file: LANG KIND ARG -->``):

- ``python`` runs twice in a database of its own (the environment names it and
  the hashing embedder); the second run must succeed and add no memory, edge,
  tombstone or other truth row, because a newcomer runs the quickstart twice.
  ``once`` runs it once (the block's point is to add, e.g. a turn stamped now);
  ``setup NAME`` runs a prelude from PRELUDES first (for fragments that use
  ``ns`` or a node id; ``once NAME`` likewise); ``raises NAME ERROR`` expects
  that memstore error.
- ``sh``/``bash``/``console`` run each command line in bash, in a temporary
  folder holding FILES, with the installed ``memstore`` first on PATH; every
  line must exit 0.
- ``sql`` runs in one transaction; a block that shows ``-- ERROR:`` must fail
  with that message.
- ``json`` must parse, and ``jsonl`` line by line.
- ``signature QUALNAME`` (a signature shown for reading) must name exactly the
  parameters of that function, with its defaults.
- ``bench`` (the benchmark pages' commands, which take minutes to hours): each
  script named must exist and accept every ``--option`` the line gives it.
- ``covered-by TEST`` is run by that test module, which must read this page.
- ``skip REASON`` is not run, and must say why; text, output and config
  blocks (``text``, ``nginx``, ``ini``, ``cron``, no language) are not code.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memstore import MemoryStore
from memstore.errors import MemstoreError
from tests.conftest import row_counts

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent

FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
MARK = re.compile(r"^<!-- doc-test: (?P<kind>[\w-]+)(?: (?P<arg>.*?))? -->$")
FILE_MARK = re.compile(
    r"^<!-- doc-test-file: (?P<lang>[\w-]+) (?P<kind>[\w-]+)(?: (?P<arg>.*?))? -->$", re.M
)
BY_LANGUAGE = {
    "python": "run",
    "sh": "run",
    "bash": "run",
    "console": "run",
    "sql": "run",
    "json": "json",
    "text": "text",
    "nginx": "text",
    "ini": "text",
    "cron": "text",
    "jsonl": "json-lines",
    "": "text",
}
KINDS = {
    "run",
    "once",
    "setup",
    "raises",
    "json",
    "json-lines",
    "text",
    "signature",
    "bench",
    "covered-by",
    "skip",
}
# Logs may grow when a block runs again (an activation's telemetry, the audit
# row of an applied batch, the confirmation a remembered-again fact records);
# what must not grow is what the store knows.
LOGS = {"activations", "node_state", "edge_state", "operations", "confirmations"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    kind: str
    arg: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(page: Path) -> Iterator[Block]:
    text = page.read_text()
    by_file = {m["lang"]: (m["kind"], m["arg"] or "") for m in FILE_MARK.finditer(text)}
    for fence in FENCE.finditer(text):
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        line = text.count("\n", 0, fence.start()) + 1
        lang = fence["lang"]
        if mark := MARK.match(before):
            kind, arg = mark["kind"], mark["arg"] or ""
        elif lang in by_file:
            kind, arg = by_file[lang]
        else:
            kind, arg = BY_LANGUAGE.get(lang, "unknown"), ""
        yield Block(page, line, lang, fence["body"], kind, arg)


BLOCKS = [block for page in PAGES for block in _blocks(page)]


def of_kind(*kinds: str, langs: tuple[str, ...] = ()) -> list[Any]:
    chosen = [b for b in BLOCKS if b.kind in kinds and (not langs or b.lang in langs)]
    return [pytest.param(b, id=b.name) for b in chosen]


def test_every_block_is_classified():
    unknown = [
        f"{b.name} ({b.lang or 'no language'}: {b.kind})" for b in BLOCKS if b.kind not in KINDS
    ]
    assert not unknown, f"blocks no rule runs (add a doc-test marker): {unknown}"
    unexplained = [b.name for b in BLOCKS if b.kind == "skip" and len(b.arg) < 15]
    assert not unexplained, f"a skipped block must say why: {unexplained}"
    assert len([b for b in BLOCKS if b.kind in ("run", "once", "setup", "raises")]) >= 30


# --- python ------------------------------------------------------------------------------

# Preludes for fragments: each defines what the fragment uses, on the
# environment's database (MEMSTORE_DATABASE_URL), like the page's earlier text.
PRELUDES = {
    "ns": """
from memstore import MemoryStore
store = MemoryStore.open()
ns = store.namespace("agent-7")
""",
    "dinner": """
from memstore import MemoryStore
store = MemoryStore.open()
ns = store.namespace("agent-7")
dinner = ns.remember("Team dinner on Friday", node_type="Fact")
allergy = ns.remember("Maya is allergic to peanuts", node_type="Safety", layer=0)
ns.link(dinner.id, allergy.id, relation="constrained_by", weight=0.9)
""",
    "short-term": """
from memstore import MemoryStore
store = MemoryStore.open()
ns = store.namespace("agent-7")
short_term_id = ns.apply(
    [{"op": "record_short_term", "salience": 0.5,
      "anatomy": {"target": "deploys", "claim_or_question": "Deploys fail on Fridays",
                  "tension": "release day", "action_implication": "move releases",
                  "anchors": ["incident-12"]}}],
    phase="rumination", actor="agent-7",
).accepted[0].nodes[0]
""",
    "identity": """
from memstore import MemoryStore
store = MemoryStore.open()
ns = store.namespace("agent-7")
anatomy = {"target": "self", "claim_or_question": "I tell the truth", "tension": "tact",
           "action_implication": "say it kindly", "anchors": ["turn:3"]}
crystallize = {"op": "crystallize_identity", "anatomy": anatomy, "content": "I tell the truth"}
proposed = ns.apply([{"op": "propose", "operation": crystallize, "rationale": "every session",
                      "evidence": ["turn:3"]}], phase="wake")
node_id = ns.review.accept(proposed.results[0].proposal_id, reviewer="alice").results[0].nodes[0]
""",
    "distiller": """
import json
from memstore import MemoryStore
store = MemoryStore.open()
ns = store.namespace("agent-7")
def render(records):
    return "\\n".join(r.content for r in records)
def call_model(prompt):
    return "[]"   # a model that proposes nothing: the sleep then fails on residue
""",
}


@pytest.fixture
def block_environment(monkeypatch, make_database) -> str:
    """A database of the block's own, named by the environment as a reader's shell would."""
    url: str = make_database()
    monkeypatch.setenv("MEMSTORE_DATABASE_URL", url)
    monkeypatch.setenv("MEMSTORE_EMBEDDER", "hashing")
    return url


def truth(url: str) -> dict[str, int]:
    return {t: n for t, n in row_counts(url).items() if t not in LOGS}


def _execute(block: Block) -> None:
    names: dict[str, Any] = {"__name__": "__doc_block__"}
    code = block.body
    if prelude := block.arg.split(" ", 1)[0]:
        code = PRELUDES[prelude] + code
    try:
        exec(compile(code, block.name, "exec"), names)
    finally:
        if isinstance(store := names.get("store"), MemoryStore):
            store.close()  # a prelude's store; the page's own blocks close theirs


@pytest.mark.parametrize("block", of_kind("run", "setup", "once", langs=("python",)))
def test_python_block_runs_twice_and_adds_nothing_the_second_time(block, block_environment):
    _execute(block)
    if block.kind == "once":
        return
    after_first = truth(block_environment)
    _execute(block)
    assert truth(block_environment) == after_first, "the second run added to the store"


@pytest.mark.parametrize("block", of_kind("raises", langs=("python",)))
def test_python_block_raises_what_the_page_says(block, block_environment):
    error = block.arg.rsplit(" ", 1)[-1]
    expected = getattr(importlib.import_module("memstore.errors"), error)
    assert issubclass(expected, MemstoreError)
    with pytest.raises(expected):
        _execute(block)
    assert error in block.body, "the page should show the error it raises"


# --- shell -------------------------------------------------------------------------------

# Files the shell blocks name, as a reader would have them beside the commands.
FILES = {
    "ops.json": json.dumps(
        [
            {
                "op": "record_short_term",
                "salience": 0.5,
                "anatomy": {
                    "target": "deploys",
                    "claim_or_question": "Deploys fail on Fridays",
                    "tension": "release day",
                    "action_implication": "move releases",
                    "anchors": ["incident-12"],
                },
            }
        ]
    ),
    # docs/cli.md's transcript, as its jsonl block shows it.
    "chat.jsonl": "\n".join(
        json.dumps({"role": role, "content": text, "session_id": "trip", "at": at})
        for role, text, at in (
            ("user", "When does the harbour ferry leave?", "2026-11-30T09:00:00+00:00"),
            ("assistant", "At 10:15 from pier 3.", "2026-11-30T09:00:05+00:00"),
        )
    ),
}


def commands(body: str) -> list[str]:
    """The block's command lines: prompts, comments and continuations resolved."""
    joined = body.replace("\\\n", " ")
    lines = [line.strip().removeprefix("$ ") for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("block", of_kind("run", langs=("sh", "bash", "console")))
def test_shell_block_runs(block, block_environment, tmp_path):
    for name, content in FILES.items():
        (tmp_path / name).write_text(content)
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    (tmp_path / ".venv").symlink_to(BIN.parent)  # the README's `.venv/bin/memstore`
    for command in commands(block.body):
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{command!r} exited {done.returncode}: {done.stderr}"


# --- sql ---------------------------------------------------------------------------------


def _seeded(url: str) -> int:
    """A namespace with a revision, a link and a forgotten memory; its id."""
    with MemoryStore.open(url) as store:
        ns = store.namespace("agent-7")
        old = ns.remember("Alice lives in Lisbon", kind="semantic", source="chat:42")
        ns.revise(old.id, "Alice lives in Porto", reason="she moved")
        dinner = ns.remember("Team dinner on Friday", node_type="Fact")
        allergy = ns.remember("Maya is allergic to peanuts", node_type="Safety", layer=0)
        ns.link(dinner.id, allergy.id, relation="constrained_by", weight=0.9)
        ns.forget(dinner.id, reason="it happened")
        ns.activate("book a restaurant for the team dinner", depth=2, learn=True)
        return ns.id


@pytest.mark.parametrize("block", of_kind("run", langs=("sql",)))
def test_sql_block_runs(block, block_environment):
    expected_error = re.search(r"^-- ERROR:\s+(.*)$", block.body, re.M)
    namespace_id = _seeded(block_environment)
    with psycopg.connect(block_environment) as conn:
        scope = sql.Literal(str(namespace_id))
        conn.execute(sql.SQL("SET LOCAL memstore.namespace_id = {}").format(scope))
        conn.execute("SET LOCAL memstore.privacy_ceiling = '3'")
        if expected_error is None:
            conn.execute(block.body)
            return
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(block.body)
        assert expected_error[1].strip() in str(raised.value)


# --- what is read, not run ---------------------------------------------------------------


@pytest.mark.parametrize("block", of_kind("json"))
def test_json_block_parses(block):
    json.loads(block.body)


@pytest.mark.parametrize("block", of_kind("json-lines"))
def test_json_lines_block_parses_line_by_line(block):
    for line in block.body.splitlines():
        if line.strip():
            json.loads(line)


@pytest.mark.parametrize("block", of_kind("signature"))
def test_signature_block_matches_the_code(block):
    module, _, qualname = block.arg.rpartition(":")
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    shown_function: dict[str, Any] = {}
    exec(f"def shown({_parameters(block.body)}): pass", shown_function)  # literals only
    shown = inspect.signature(shown_function["shown"]).parameters
    real = {n: p for n, p in inspect.signature(target).parameters.items() if n != "self"}
    assert list(shown) == list(real), f"{block.arg}: the page shows {list(shown)}"
    for name, parameter in shown.items():
        assert parameter.kind == real[name].kind, name
        assert parameter.default == real[name].default, name


def _parameters(body: str) -> str:
    """What is between the call's outer parentheses."""
    start = body.index("(")
    depth = 0
    for position, char in enumerate(body[start:], start):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return body[start + 1 : position]
    raise AssertionError("unbalanced parentheses")


@pytest.mark.parametrize("block", of_kind("bench"))
def test_benchmark_commands_name_real_scripts_and_options(block):
    for command in commands(block.body):
        words = shlex.split(command.replace("<tree>", "tree"), comments=True)
        scripts = [w for w in words if w.startswith("benchmarks/") and w.endswith(".py")]
        if not scripts:
            continue  # git worktree, psql: set-up around the benchmark
        source = (ROOT / scripts[0]).read_text()
        for option in (w.split("=")[0] for w in words if w.startswith("--")):
            assert f'"{option}"' in source, f"{scripts[0]} has no option {option}"


@pytest.mark.parametrize("block", of_kind("covered-by"))
def test_covered_blocks_are_read_by_their_test(block):
    test = ROOT / block.arg
    assert test.is_file(), f"{block.name}: no test {block.arg}"
    assert block.page.name in test.read_text(), f"{block.arg} does not read {block.page.name}"
