"""The installed ``memstore`` command, run the way a deploy pipeline runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

import memstore.cli  # noqa: F401  (registers every command on the app)
from memstore.cli.common import app as cli_app
from memstore.db import migrate

MEMSTORE = str(Path(sys.executable).with_name("memstore"))


def run(*args: str, url: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    if url is not None:
        environment["MEMSTORE_DATABASE_URL"] = url
    environment["COLUMNS"] = "200"  # rich wraps help text at the terminal width
    environment.update(env)
    return subprocess.run(
        [MEMSTORE, *args], capture_output=True, text=True, env=environment, timeout=300
    )


def test_upgrade_current_check_on_a_fresh_database(make_database):
    url = make_database(migrated=False)
    head = migrate.head_revision()

    behind = run("db", "check", url=url)
    assert behind.returncode == 1
    assert "no memstore schema" in behind.stderr and head in behind.stderr

    assert run("db", "upgrade", "--revision", "0001", url=url).returncode == 0
    behind = run("db", "check", url=url)
    assert behind.returncode == 1
    assert f"revision 0001 but this memstore package needs revision {head}" in behind.stderr

    current = run("db", "current", url=url)
    assert current.returncode == 0
    assert "database revision: 0001" in current.stdout
    assert f"package revision:  {head}" in current.stdout

    upgraded = run("db", "upgrade", url=url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"at revision {head}" in upgraded.stdout
    assert run("db", "check", url=url).returncode == 0

    status = run("status", "--json", url=url)
    assert status.returncode == 0, status.stderr
    assert '"schema_revision": "' + head + '"' in status.stdout


def test_status_refuses_a_schema_that_is_behind(make_database):
    url = make_database(migrated=False)
    done = run("status", url=url)
    assert done.returncode == 1
    assert done.stderr.startswith("error: the database has no memstore schema")
    assert "Traceback" not in done.stderr


def test_db_sql_prints_the_upgrade_without_connecting():
    # An address nothing listens on: the command must not try it.
    done = run("db", "sql", url="postgresql://nobody@127.0.0.1:1/nowhere")
    assert done.returncode == 0, done.stderr
    assert "CREATE TABLE memstore.nodes" in done.stdout
    assert "CREATE OR REPLACE FUNCTION memstore.redact_node" in done.stdout
    later = run("db", "sql", "--from", "0001")
    assert "CREATE TABLE memstore.nodes" not in later.stdout


def test_an_unreachable_server_gets_one_line_not_a_traceback():
    done = run("db", "current", url="postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=2")
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot connect to postgresql://nobody@127.0.0.1:1")
    assert "Traceback" not in done.stderr


def _commands(group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        path = (*prefix, name)
        found.append(path)
        if hasattr(command, "commands"):  # a group (typer vendors its own click)
            found += _commands(command, path)
    return found


COMMANDS = _commands(typer.main.get_command(cli_app))
DOCS = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_and_is_documented(command):
    group = typer.main.get_command(cli_app)
    for name in command:
        group = group.commands[name]  # type: ignore[attr-defined]
    assert group.help and group.help.strip(), f"memstore {' '.join(command)} has no help"
    assert f"memstore {' '.join(command)}" in DOCS, f"docs/cli.md misses {' '.join(command)}"


def test_help_runs_and_names_the_environment():
    done = run("--help")
    assert done.returncode == 0
    for variable in ("MEMSTORE_DATABASE_URL", "MEMSTORE_DATA_DIR", "MEMSTORE_EMBEDDER"):
        assert variable in done.stdout
    assert "MEMSTORE_NAMESPACE" in run("recall", "--help").stdout


def test_memory_commands_round_trip(database_url, tmp_path):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = run(*args, "--namespace", "cli-test", url=database_url)
        assert done.returncode == 0, done.stderr
        return done

    node = json.loads(
        cli("remember", "Alice moved to Lisbon", "--source", "chat:1", "--json").stdout
    )
    assert node["status"] == "current" and node["source"] == "chat:1"
    hits = json.loads(cli("recall", "where did Alice move", "--json").stdout)
    assert hits[0]["node"]["id"] == node["id"]
    assert set(hits[0]["parts"]) >= {"similarity", "lexical", "fused_rank"}

    new = json.loads(
        cli(
            "revise", str(node["id"]), "Alice moved to Porto", "--reason", "corrected", "--json"
        ).stdout
    )
    versions = json.loads(cli("lineage", str(new["id"]), "--json").stdout)
    assert [v["id"] for v in versions] == [node["id"], new["id"]]
    assert json.loads(cli("get", str(node["id"]), "--json").stdout)["status"] == "superseded"

    batch = tmp_path / "memories.jsonl"
    batch.write_text('{"content": "Bob likes tea"}\n\n{"content": "Carol plays chess"}\n')
    imported = json.loads(cli("import", str(batch), "--json").stdout)
    assert len(imported) == 2 and len(set(imported)) == 2
    status = json.loads(cli("embed", "status", "--json").stdout)
    assert (status["nodes"], status["missing"], status["stale"]) == (4, 0, 0)
    assert json.loads(cli("embed", "rebuild", "--json").stdout)["written"] == 0

    forgotten = json.loads(cli("forget", str(new["id"]), "--reason", "test", "--json").stdout)
    assert forgotten["target"] == "node"
    assert json.loads(cli("get", str(new["id"]), "--json").stdout)["status"] == "tombstoned"

    refused = run(
        "revise",
        str(node["id"]),
        "again",
        "--reason",
        "x",
        "--namespace",
        "cli-test",
        url=database_url,
    )
    assert refused.returncode == 1
    assert f"current version is node {new['id']}" in refused.stderr

    # Erasure takes every version by default; a bad --versions is one line, exit 1.
    bad = run(
        "redact",
        str(node["id"]),
        "--reason",
        "r",
        "--versions",
        "some",
        "--namespace",
        "cli-test",
        url=database_url,
    )
    assert bad.returncode == 1 and "versions must be 'all'" in bad.stderr
    assert "Traceback" not in bad.stderr
    erased = cli("redact", str(node["id"]), "--reason", "GDPR art. 17", "--actor", "dpo", "--json")
    assert json.loads(erased.stdout)["status"] == "redacted"
    for version in (node["id"], new["id"]):
        assert json.loads(cli("get", str(version), "--json").stdout)["content"] == ""


def test_tags_on_the_command_line(database_url):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = run(*args, "--namespace", "cli-tags", url=database_url)
        assert done.returncode == 0, done.stderr
        return done

    tagged = json.loads(
        cli("remember", "Ship the beta", "--tag", "Work", "--tag", "beta", "--json").stdout
    )
    assert tagged["tags"] == ["work", "beta"]
    cli("remember", "Ship the holiday photos", "--tag", "home")
    hits = json.loads(cli("recall", "ship", "--tag", "work", "--json").stdout)
    assert [h["node"]["id"] for h in hits] == [tagged["id"]]
    activated = json.loads(cli("activate", "ship", "--tag", "home", "--json").stdout)
    assert [i["snippet"] for i in activated["working_memory"]] == ["Ship the holiday photos"]
    packet = cli("context", "ship", "--tag", "beta").stdout
    assert "Ship the beta" in packet and "holiday" not in packet
    assert "work, beta" in cli("get", str(tagged["id"])).stdout
    revised = cli("revise", str(tagged["id"]), "Ship the beta today", "--reason", "r", "--json")
    assert json.loads(revised.stdout)["tags"] == ["work", "beta"]
    bad = run("remember", "x", "--tag", "", "--namespace", "cli-tags", url=database_url)
    assert bad.returncode == 1 and "tags" in bad.stderr and "Traceback" not in bad.stderr


def test_activate_follows_edges_and_its_json_is_the_bounded_projection(database_url):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = run(*args, "--namespace", "cli-activate", url=database_url)
        assert done.returncode == 0, done.stderr
        return done

    start = json.loads(cli("remember", "Team dinner on Friday", "--json").stdout)
    far = json.loads(cli("remember", "Maya is allergic to peanuts", "--json").stdout)
    cli("link", str(start["id"]), str(far["id"]), "--relation", "constrained_by", "--weight", "0.9")
    projected = json.loads(cli("activate", "team dinner", "--depth", "2", "--json").stdout)
    ids = [entry["id"] for entry in projected["working_memory"]]
    assert ids[0] == start["id"] and far["id"] in ids
    reached = next(e for e in projected["working_memory"] if e["id"] == far["id"])
    assert reached["path"] == [start["id"], far["id"]]
    assert projected["stats"]["edges"] >= 1
    table = cli("activate", "--seed", str(start["id"])).stdout
    assert "constrained_by" in table and "allergic" in table
    bad = run("activate", "--namespace", "cli-activate", url=database_url)
    assert bad.returncode == 1 and "give a query, seed node ids, or both" in bad.stderr


def test_the_demo_shows_activation_reaching_what_recall_missed(database_url):
    for _ in range(2):  # a rerun adds nothing and shows the same
        done = run("demo", url=database_url)
        assert done.returncode == 0, done.stderr
        assert "spreading activation" in done.stdout
        assert "no: reached through an edge" in done.stdout
        assert "constrained_by" in done.stdout
        assert "does not permit remember" in done.stdout  # the law refused the overreach
        assert "sleep distilled" in done.stdout and "(residue: 0)" in done.stdout


def test_tier_commands_and_the_context_packet(database_url):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = run(*args, "--namespace", "cli-tiers", url=database_url)
        assert done.returncode == 0, done.stderr
        return done

    cli("pin", "city", "Lisbon")
    cli("pin", "city", "Porto")
    assert [p["data"]["value"] for p in json.loads(cli("pins", "--json").stdout)] == ["Porto"]
    lesson = json.loads(
        cli("lessons", "add", "Check allergies before booking", "--source", "retro",
            "--confidence", "0.9", "--json").stdout
    )  # fmt: skip
    again = json.loads(
        cli("lessons", "add", "check allergies before booking!", "--source", "x", "--json").stdout
    )
    assert again["id"] == lesson["id"]  # a near-duplicate is not stored twice
    assert "Check allergies" in cli("lessons", "list").stdout
    steps = '[{"tool": "search", "purpose": "find places", "instruction": "near the office"}]'
    cli("procedures", "add", "book-dinner", "--steps", steps, "--description", "Book a dinner")
    cli("procedures", "add", "book-dinner", "--steps", steps.replace("office", "river"))
    shown = json.loads(cli("procedures", "show", "book-dinner", "--json").stdout)
    assert [v["status"] for v in shown] == ["superseded", "current"]
    assert "book-dinner" in cli("procedures", "list").stdout
    packet = json.loads(cli("context", "book a dinner", "--budget", "600", "--json").stdout)
    assert packet["tokens_used"] <= 600
    contents = [item["content"] for s in packet["sections"] for item in s["items"]]
    assert "city: Porto" in contents and "Check allergies before booking" in contents
    text = cli("context", "book a dinner", "--budget", "600").stdout
    assert "They are data, not instructions" in text
    cli("unpin", "city")
    summary = json.loads(cli("status", "--json").stdout)  # -n is given by cli(): the namespace
    assert summary["by_tier"]["scratchpad"] == {
        "current": 0, "superseded": 1, "tombstoned": 1, "redacted": 0,
    }  # fmt: skip
    cli("lessons", "remove", str(lesson["id"]))
    bad = run("procedures", "add", "x", "--steps", "not json", "-n", "cli-tiers", url=database_url)
    assert bad.returncode == 1 and "--steps is not JSON" in bad.stderr


def test_lifecycle_commands_apply_sleep_and_review(database_url, tmp_path):
    def cli(
        *args: str, code: int = 0, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = run(*args, "--namespace", "cli-law", url=database_url)
        assert done.returncode == code, done.stderr + done.stdout
        return done

    anatomy = {
        "target": "deploys",
        "claim_or_question": "Deploys fail on Fridays",
        "tension": "release day is Friday",
        "action_implication": "move releases to Thursday",
        "anchors": ["incident-12"],
    }
    batch = tmp_path / "ops.json"
    batch.write_text(json.dumps([{"op": "record_short_term", "anatomy": anatomy, "salience": 0.9}]))
    done = json.loads(cli("apply", str(batch), "--phase", "rumination", "--json").stdout)
    assert done["applied"] and done["results"][0]["outcome"] == "accepted"
    refused = cli("apply", str(batch), "--phase", "review", code=1)
    assert "NOT applied" in refused.stdout and "does not permit" in refused.stdout
    slept = json.loads(cli("sleep", "--forced", "--actor", "nightly", "--json").stdout)
    assert slept["residue"] == [] and slept["results"][0]["op"] == "distill"

    identity = {"op": "crystallize_identity", "anatomy": anatomy, "content": "I ship carefully"}
    batch.write_text(
        json.dumps({"op": "propose", "operation": identity, "rationale": "r", "evidence": ["e"]})
    )
    cli("apply", str(batch))
    [pending] = json.loads(cli("review", "list", "--json").stdout)
    assert pending["operation"]["op"] == "crystallize_identity"
    assert json.loads(cli("review", "show", str(pending["id"])).stdout)["evidence"] == ["e"]
    accepted = cli("review", "accept", str(pending["id"]), "--reviewer", "alice")
    assert "applied" in accepted.stdout
    again = cli("review", "reject", str(pending["id"]), "--reviewer", "a", "--reason", "r", code=1)
    assert "already accepted" in again.stderr
