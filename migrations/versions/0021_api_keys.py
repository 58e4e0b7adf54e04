"""API keys of `memstore serve`: two owner-only, append-only tables and memstore.authenticate_key.

memstore.api_keys holds a key's lookup prefix, the sha256 of its secret, its
binding (one namespace or an explicit prefix), scopes and expiry;
memstore.api_key_revocations a revocation as a new row. The service role reads
neither and checks a presented key through memstore.authenticate_key
(SECURITY DEFINER), which answers only for a secret the caller holds.

A frozen copy of sql/10_api_keys.sql at this revision.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/10_api_keys.sql
API_KEYS_SQL = r"""
-- API keys of `memstore serve` (docs/server.md, "Keys").
--
-- A key is a random 256-bit secret shown once, at creation; the store keeps
-- only a lookup prefix of it and its sha256 (a secret of 256 random bits needs
-- no slow hash: nobody can guess it from the digest). A key is bound to one
-- namespace or to an explicit namespace prefix, with a set of scopes.
--
-- Both tables are the owner's: `memstore keys create / revoke` run as the
-- migrating role. They are append-only like the truth tables: a revocation is
-- a row of api_key_revocations, an expiry a column given at creation; a key is
-- never changed or removed, so what a key could do at any time stays on record.
--
-- The service (memstore_app) reads neither table. It checks a presented key
-- with memstore.authenticate_key, which answers only for a secret the caller
-- already holds (the lookup prefix and the digest must both match), as
-- memstore.find_namespace answers only for a name the caller knows.
--
-- Row-level security is on, as for every table, with a policy that admits no
-- confined role: only the owner (who is not confined) sees the rows.

ALTER TABLE memstore.api_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_only ON memstore.api_keys USING (false);

ALTER TABLE memstore.api_key_revocations ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_only ON memstore.api_key_revocations USING (false);

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.api_keys
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'api keys are append-only: revoke a key with a new api_key_revocations row; create a new key');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.api_keys
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'api keys are append-only: revoke a key with a new api_key_revocations row; create a new key');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'api keys are append-only: revoke a key with a new api_key_revocations row; create a new key');

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.api_key_revocations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'api key revocations are append-only: a revoked key stays revoked; create a new key');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.api_key_revocations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'api key revocations are append-only: a revoked key stays revoked; create a new key');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.api_key_revocations
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'api key revocations are append-only: a revoked key stays revoked; create a new key');

-- The key whose lookup prefix and secret digest are both p_lookup and
-- p_secret_hash, with whether it is revoked or expired now (the database's
-- clock decides, not the caller's); no row for any other secret.
CREATE OR REPLACE FUNCTION memstore.authenticate_key(p_lookup text, p_secret_hash bytea)
RETURNS TABLE (
    id bigint,
    name text,
    namespace text,
    namespace_prefix text,
    scopes text[],
    expires_at timestamptz,
    revoked boolean,
    expired boolean
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT k.id, k.name, k.namespace, k.namespace_prefix, k.scopes, k.expires_at,
           EXISTS (SELECT 1 FROM memstore.api_key_revocations r WHERE r.key_id = k.id),
           k.expires_at IS NOT NULL AND k.expires_at <= now()
    FROM memstore.api_keys k
    WHERE k.lookup = p_lookup AND k.secret_hash = p_secret_hash;
$$;

REVOKE ALL ON FUNCTION memstore.authenticate_key(text, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.authenticate_key(text, bytea) TO CURRENT_USER;
"""


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("lookup", sa.Text(), nullable=False),
        sa.Column("secret_hash", sa.LargeBinary(), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("namespace", sa.Text(), nullable=True),
        sa.Column("namespace_prefix", sa.Text(), nullable=True),
        sa.Column("scopes", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("expires_at", sa.TIMESTAMP(timezone=True), nullable=True),
        sa.Column("created_by", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("octet_length(secret_hash) = 32", name=op.f("ck_api_keys_sha256_hash")),
        sa.CheckConstraint(
            "(namespace IS NULL) <> (namespace_prefix IS NULL)",
            name=op.f("ck_api_keys_one_binding"),
        ),
        sa.CheckConstraint(
            "char_length(namespace) >= 1 AND octet_length(namespace) <= 2048",
            name=op.f("ck_api_keys_namespace_length"),
        ),
        sa.CheckConstraint(
            "char_length(namespace_prefix) >= 1 AND octet_length(namespace_prefix) <= 2048",
            name=op.f("ck_api_keys_prefix_length"),
        ),
        sa.CheckConstraint(
            "cardinality(scopes) >= 1 AND scopes <@ "
            "ARRAY['read', 'write', 'review', 'erase', 'admin']::text[]",
            name=op.f("ck_api_keys_known_scopes"),
        ),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("lookup", name="uq_api_keys_lookup"),
        schema="memstore",
    )
    op.create_table(
        "api_key_revocations",
        sa.Column("key_id", sa.BigInteger(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column(
            "revoked_at",
            sa.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["key_id"], ["memstore.api_keys.id"], name="fk_api_key_revocations_key_id"
        ),
        sa.PrimaryKeyConstraint("key_id", name="pk_api_key_revocations"),
        schema="memstore",
    )
    op.execute(API_KEYS_SQL)


def downgrade() -> None:
    op.execute("DROP FUNCTION memstore.authenticate_key(text, bytea)")
    op.drop_table("api_key_revocations", schema="memstore")
    op.drop_table("api_keys", schema="memstore")
