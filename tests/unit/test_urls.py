from __future__ import annotations

import pytest

from memstore.db.urls import libpq_url, mask, sqlalchemy_url
from memstore.errors import ConfigurationError


def test_urls_are_normalised_for_each_driver():
    url = "postgres://app:s3cret@db.internal:5433/memory?sslmode=require"
    assert sqlalchemy_url(url).drivername == "postgresql+psycopg"
    assert libpq_url(url).startswith("postgresql://app:s3cret@db.internal:5433/memory")
    assert "s3cret" not in mask(url)


def test_a_non_postgres_url_is_refused():
    with pytest.raises(ConfigurationError, match="memstore needs PostgreSQL"):
        sqlalchemy_url("sqlite:///memory.db")
