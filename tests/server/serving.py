"""``memstore serve`` as a subprocess on a test database, for the end-to-end tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from tests.conftest import MEMSTORE_CLI


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(database_url: str, log: Path) -> Iterator[str]:
    """The base URL of ``memstore serve`` on ``database_url``, stopped with SIGTERM after.

    Its output goes to ``log``: a pipe nobody reads would block it once full.
    """
    port = free_port()
    environment = {**os.environ, "MEMSTORE_DATABASE_URL": database_url}
    with log.open("w") as sink:
        process = subprocess.Popen(
            [MEMSTORE_CLI, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx2.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"memstore serve did not start: {log.read_text()}")
            time.sleep(0.2)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
