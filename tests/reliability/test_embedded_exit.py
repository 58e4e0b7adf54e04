"""The embedded server stops with its last user, however that user ends (issue 21 item 10).

Each test starts real Python processes that open the embedded store in a data
directory of this module's (never the harness's server or the session's data
directory), ends them with a signal or a normal exit, and checks that the
server stopped and that pgserver's list of users (``.handle_pids.json``) is
empty: or, while another user lives, that the server still runs for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.db.embedded import users

WAIT = 120.0  # seconds: generous, the machine is shared; a pass never waits this long

# A user of the store: opens it, says "ready", then waits to be ended (or, with
# "exit", closes it and exits; with "nohup", ignores SIGHUP first, as nohup does).
USER = """
import signal, sys, time
mode = sys.argv[1]
if mode == "nohup":
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
from memstore import MemoryStore
store = MemoryStore.open()
store.namespace("exit-test").remember("still here")
print("ready", flush=True)
if mode == "exit":
    store.close()
    sys.exit(0)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("embedded-exit")
    yield path
    # Whatever a failed test left running must not outlive the session.
    if postmaster_pid(path) is not None:
        end(start_user(path, "exit"))


def environment(data_dir: Path) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    return {**kept, "MEMSTORE_DATA_DIR": str(data_dir), "MEMSTORE_EMBEDDER": "hashing"}


def start_user(data_dir: Path, mode: str = "wait") -> subprocess.Popen[str]:
    """A process using the store; returns once it is ready."""
    process = subprocess.Popen(
        [sys.executable, "-c", USER, mode],
        env=environment(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # "" if it died first
    if line.strip() != "ready":
        process.kill()
        _, stderr = process.communicate(timeout=WAIT)
        pytest.fail(f"the store user did not start: {stderr}")
    return process


def postmaster_pid(data_dir: Path) -> int | None:
    """The running server's pid, or None when no server runs in ``data_dir``."""
    try:
        pid = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid


def assert_stopped_and_clean(data_dir: Path, server: int) -> None:
    deadline = time.monotonic() + WAIT
    while postmaster_pid(data_dir) is not None or pid_exists(server):
        assert time.monotonic() < deadline, "the embedded server kept running"
        time.sleep(0.1)
    assert users(data_dir / "pg") == []


def pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def end(process: subprocess.Popen[str], signum: int | None = None) -> int:
    """Send ``signum`` (None: none, it exits by itself); its exit status once it ended."""
    if signum is not None:
        process.send_signal(signum)
    _, stderr = process.communicate(timeout=WAIT)
    if process.returncode not in (0, -(signum or 0)):
        pytest.fail(f"the store user ended with {process.returncode}: {stderr}")
    return process.returncode


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_the_only_user_ending_by_a_signal_stops_the_server(data_dir, signum):
    user = start_user(data_dir)
    server = postmaster_pid(data_dir)
    assert server is not None
    assert users(data_dir / "pg") == [user.pid]
    # It still dies of the signal (a shell or supervisor sees why it ended).
    assert end(user, signum) == -signum
    assert_stopped_and_clean(data_dir, server)


def test_the_only_user_exiting_normally_stops_the_server(data_dir):
    user = start_user(data_dir, "exit")
    server = postmaster_pid(data_dir)
    assert server is not None
    assert end(user) == 0
    assert_stopped_and_clean(data_dir, server)


def test_the_server_runs_while_another_user_lives(data_dir):
    first, second = start_user(data_dir), start_user(data_dir)
    server = postmaster_pid(data_dir)
    assert server is not None
    assert sorted(users(data_dir / "pg")) == sorted([first.pid, second.pid])
    assert end(first, signal.SIGTERM) == -signal.SIGTERM
    assert postmaster_pid(data_dir) == server
    assert users(data_dir / "pg") == [second.pid]
    assert end(second, signal.SIGHUP) == -signal.SIGHUP
    assert_stopped_and_clean(data_dir, server)


def test_a_user_that_ignores_sighup_keeps_it_ignored(data_dir):
    user = start_user(data_dir, "nohup")
    server = postmaster_pid(data_dir)
    assert server is not None
    user.send_signal(signal.SIGHUP)
    with pytest.raises(subprocess.TimeoutExpired):
        user.wait(2)
    assert postmaster_pid(data_dir) == server
    assert end(user, signal.SIGTERM) == -signal.SIGTERM
    assert_stopped_and_clean(data_dir, server)


def test_the_next_user_recovers_from_a_killed_one(data_dir):
    """SIGKILL leaves a stale pid and a running server; the next clean cycle stops it."""
    killed = start_user(data_dir)
    server = postmaster_pid(data_dir)
    assert server is not None
    assert end(killed, signal.SIGKILL) == -signal.SIGKILL
    assert postmaster_pid(data_dir) == server  # nobody could stop it
    assert users(data_dir / "pg") == [killed.pid]  # and the gone user is still listed
    user = start_user(data_dir, "exit")
    assert end(user) == 0
    assert_stopped_and_clean(data_dir, server)


def test_a_stale_pid_written_by_hand_is_dropped(data_dir):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    assert gone.wait(WAIT) == 0  # reaped: the pid names no process now
    pgdata = data_dir / "pg"
    (pgdata / ".handle_pids.json").write_text(f"[{gone.pid}]")
    user = start_user(data_dir)
    server = postmaster_pid(data_dir)
    assert server is not None
    assert users(pgdata) == [user.pid]
    assert end(user, signal.SIGTERM) == -signal.SIGTERM
    assert_stopped_and_clean(data_dir, server)
