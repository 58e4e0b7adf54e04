"""What a server must offer, decided without a server (the decision is pure)."""

from __future__ import annotations

import pytest

from memstore.db.engine import assess_server
from memstore.errors import UnsupportedServerError


@pytest.mark.parametrize(
    ("version", "available", "installed"),
    [
        (150000, "0.8.0", None),
        (170004, "0.8.1", "0.8.1"),
        (180004, None, "0.8.5"),
        (160000, "0.10.0", None),
    ],
)
def test_supported_servers_pass(version, available, installed):
    assess_server(version, available, installed)


def test_postgres_14_is_refused_by_name():
    with pytest.raises(UnsupportedServerError, match=r"PostgreSQL 15 or newer.*PostgreSQL 14"):
        assess_server(140010, "0.8.0", None)


def test_a_server_without_pgvector_is_told_how_to_install_it():
    with pytest.raises(UnsupportedServerError) as exc:
        assess_server(170000, None, None)
    message = str(exc.value)
    assert "pgvector" in message
    assert "apt install postgresql-<major>-pgvector" in message
    assert "pgvector/pgvector" in message


def test_an_old_pgvector_is_refused():
    with pytest.raises(UnsupportedServerError, match=r"pgvector >= 0.8; the server offers 0.7.4"):
        assess_server(170000, "0.7.4", None)
