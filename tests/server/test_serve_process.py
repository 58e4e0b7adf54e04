"""`memstore serve` as a real process on 127.0.0.1, driven by a real HTTP client;
`memstore keys` as the owner runs it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import MEMSTORE_CLI

pytestmark = pytest.mark.slow


def _environment(database_url: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    return {**clean, "MEMSTORE_DATABASE_URL": database_url, "MEMSTORE_EMBEDDER": "hashing"}


def cli(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMSTORE_CLI, *args],
        env=_environment(database_url),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def served(database_url: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = free_port()
    process = subprocess.Popen(
        [MEMSTORE_CLI, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=_environment(database_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"memstore serve did not come up: {process.communicate()[0]}")
        time.sleep(0.2)
    try:
        yield process, base
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_keys_commands(database_url):
    made = cli(database_url, "keys", "create", "--namespace", "cli-keys", "--name", "ci")
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    assert secret.startswith("msk_") and len(secret) > 40
    assert secret not in made.stderr and "shown once" in made.stderr
    as_json = json.loads(
        cli(
            database_url,
            "keys",
            "create",
            "--namespace-prefix",
            "t/",
            "--scope",
            "read",
            "--scope",
            "review",
            "--expires-in",
            "30",
            "--json",
        ).stdout
    )
    assert {"id", "key", "namespace", "namespace_prefix", "scopes"} <= set(as_json)
    assert as_json["scopes"] == ["read", "review"] and as_json["expires_at"]
    listed = cli(database_url, "keys", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert secret not in listed.stdout and as_json["key"] not in listed.stdout
    assert "msk_" in cli(database_url, "keys", "list").stdout  # the prefix, to recognise it
    revoked = cli(database_url, "keys", "revoke", str(as_json["id"]), "--reason", "test")
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    rows = json.loads(cli(database_url, "keys", "list", "--json").stdout)
    assert [k["revoked_at"] is not None for k in rows if k["id"] == as_json["id"]] == [True]
    bad = cli(database_url, "keys", "create", "--namespace", "a", "--namespace-prefix", "b/")
    assert bad.returncode == 1 and bad.stderr.startswith("error:")
    assert cli(database_url, "keys", "revoke", "999999").returncode == 1


def test_serve_answers_over_http_and_stops_gracefully_on_sigterm(database_url, served):
    process, base = served
    made = cli(database_url, "keys", "create", "--namespace", "e2e", "--scope", "admin")
    assert made.returncode == 0, made.stderr
    headers = {"Authorization": f"Bearer {made.stdout.strip()}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        node = client.post("/v1/namespaces/e2e/memories", json={"content": "Alice likes tea"})
        assert node.status_code == 201, node.text
        hits = client.post("/v1/namespaces/e2e/recall", json={"text": "what does Alice like"})
        assert hits.json()[0]["node"]["id"] == node.json()["id"]
        assert httpx.get(f"{base}/v1/namespaces/e2e/status").status_code == 401
        assert "paths" in client.get("/openapi.json").json()

        # A request in flight when SIGTERM arrives still gets its answer.
        answers: list[httpx.Response] = []
        items = [{"content": f"bulk fact {i} " + "word " * 40} for i in range(3000)]
        writer = threading.Thread(
            target=lambda: answers.append(
                client.post("/v1/namespaces/e2e/memories/batch", json={"items": items})
            )
        )
        writer.start()
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        writer.join(timeout=60)
    output = process.communicate(timeout=60)[0]
    # uvicorn finishes the shutdown, then re-raises the signal it caught.
    assert process.returncode in (0, -signal.SIGTERM), output
    assert "Application shutdown complete" in output
    assert answers and answers[0].status_code == 201, output
    assert len(answers[0].json()["ids"]) == 3000
    assert "msk_" not in output  # no secret in the server's log
