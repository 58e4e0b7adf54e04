"""The CLI's --privacy-ceiling on read commands and `memstore namespaces` (issue 17 §1, §8)."""

from __future__ import annotations

import json
import uuid

from tests.acceptance.test_cli import run


def test_read_commands_take_the_ceiling_and_namespaces_lists_without_creating(database_url):
    name = f"cli-ceiling-{uuid.uuid4().hex[:8]}"

    def cli(*args: str, **env: str) -> str:
        done = run(*args, url=database_url, **env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def listed() -> dict[str, int]:
        return {i["name"]: i["nodes"] for i in json.loads(cli("namespaces", "--json"))}

    # Looking creates nothing.
    assert json.loads(cli("recall", "anything", "-n", name, "--json")) == []
    cli("status", "-n", name)
    assert name not in listed()
    public = json.loads(cli("remember", "the harbour opens at dawn", "-n", name, "--json"))
    secret = json.loads(
        cli("remember", "the vault code is 7731", "-n", name, "--privacy", "3", "--json")
    )
    assert listed()[name] == 2

    hits = json.loads(cli("recall", "vault code", "-n", name, "--json", "--privacy-ceiling", "0"))
    assert [h["node"]["id"] for h in hits if h["node"]["id"] == secret["id"]] == []
    by_env = json.loads(
        cli("recall", "vault code", "-n", name, "--json", MEMSTORE_PRIVACY_CEILING="0")
    )
    assert secret["id"] not in [h["node"]["id"] for h in by_env]
    hidden = run("get", str(secret["id"]), "-n", name, "--privacy-ceiling", "0", url=database_url)
    assert hidden.returncode == 1 and "does not exist" in hidden.stderr
    assert "Traceback" not in hidden.stderr
    summary = json.loads(cli("status", "-n", name, "--json", "--privacy-ceiling", "0"))
    assert summary["by_status"]["current"] == 1
    packet = cli("context", "vault code harbour", "-n", name, "--privacy-ceiling", "0")
    assert "7731" not in packet and "harbour" in packet
    low = {
        i["name"]: i["nodes"]
        for i in json.loads(cli("namespaces", "--json", "--privacy-ceiling", "0"))
    }
    assert low[name] == 1
    assert public["id"] != secret["id"]
    bad = run("recall", "x", "-n", name, "--privacy-ceiling", "4", url=database_url)
    assert bad.returncode == 2
    assert "MEMSTORE_PRIVACY_CEILING" in run("recall", "--help").stdout
    assert "MEMSTORE_PRIVACY_CEILING" in run("namespaces", "--help").stdout
