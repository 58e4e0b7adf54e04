"""Restore keeps the transaction times of an export, for the owner only (memstore restore).

memstore.restore_keeps_time(table): true only in a transaction that said
SET LOCAL memstore.restoring = 'on', for the role that owns the table and
logged in itself (current_user = session_user: no SECURITY DEFINER function
of the owner's running for memstore_app, no SET ROLE). The stamp functions
(stamp_recorded_at, stamp_at, stamp_created_at, stamp_updated_at,
stamp_redacted_at) keep a time an INSERT gives only then, and stamp_proposal
lets a decided proposal in only then; for every other role and transaction
they stamp now() and refuse as before (docs/security.md, "Restore keeps the
times").

A frozen copy of the changed parts of sql/09_transaction_time.sql at this
revision; the downgrade puts revision 0018's functions back.

Revision ID: 0023
Revises: 0021
Create Date: 2026-12-03

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0023"
down_revision: str | Sequence[str] | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/09_transaction_time.sql: restore_keeps_time() and the stamp functions
RESTORE_TIMES_SQL = r"""
-- Restore (memstore restore, docs/security.md "Restore keeps the times"): a
-- namespace rebuilt from an export must answer as_of as the original did, so
-- its rows need their original transaction times. The stamp functions keep a
-- time an INSERT gives only when restore_keeps_time() says so, which needs
-- all three of:
--   * the transaction said so: SET LOCAL memstore.restoring = 'on' (nothing
--     memstore does in the service sets it);
--   * the role writing is the table's owner (the migrating role), and
--   * it is the role that logged in (current_user = session_user): not a
--     SECURITY DEFINER function owned by the owner running for memstore_app
--     (record_operations, open_namespace), and not a SET ROLE.
-- memstore_app, memstore_reader and memstore_redactor own nothing, so for
-- them the flag changes nothing: a back-dated row still gets now(). The owner
-- could always switch the triggers off (which db check reports); this path
-- lets it keep times without that, row by row, and only where it asks.
-- It is consulted only when an INSERT gives a time other than now(), which
-- memstore's own writes never do: the everyday path costs nothing more.
-- EXECUTE stays with PUBLIC: every role's INSERT runs the stamp functions.
CREATE OR REPLACE FUNCTION memstore.restore_keeps_time(p_table oid) RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(current_setting('memstore.restoring', true), '') = 'on'
       AND current_user = session_user
       AND EXISTS (SELECT 1 FROM pg_class c
                   WHERE c.oid = p_table AND pg_get_userbyid(c.relowner) = current_user);
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_recorded_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.recorded_at IS NULL OR (NEW.recorded_at OPERATOR(pg_catalog.<>) pg_catalog.now()
                              AND NOT memstore.restore_keeps_time(TG_RELID)) THEN
        NEW.recorded_at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.at IS NULL OR (NEW.at OPERATOR(pg_catalog.<>) pg_catalog.now()
                              AND NOT memstore.restore_keeps_time(TG_RELID)) THEN
        NEW.at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_created_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.created_at IS NULL OR (NEW.created_at OPERATOR(pg_catalog.<>) pg_catalog.now()
                              AND NOT memstore.restore_keeps_time(TG_RELID)) THEN
        NEW.created_at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_updated_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.updated_at IS NULL OR (NEW.updated_at OPERATOR(pg_catalog.<>) pg_catalog.now()
                              AND NOT memstore.restore_keeps_time(TG_RELID)) THEN
        NEW.updated_at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_redacted_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.redacted_at IS NULL OR (NEW.redacted_at OPERATOR(pg_catalog.<>) pg_catalog.now()
                              AND NOT memstore.restore_keeps_time(TG_RELID)) THEN
        NEW.redacted_at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_proposal() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- A restore (above) brings decided proposals back as they were.
        IF memstore.restore_keeps_time(TG_RELID) THEN
            RETURN NEW;
        END IF;
        IF NEW.status IS DISTINCT FROM 'pending' OR NEW.decided_by IS NOT NULL
           OR NEW.decided_at IS NOT NULL OR NEW.decision_reason IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'MS004',
                MESSAGE = format('a proposal enters pending and undecided, not %s',
                                 coalesce(NEW.status, 'NULL')),
                HINT = 'propose, then accept or reject it through the review',
                SCHEMA = TG_TABLE_SCHEMA,
                TABLE = TG_TABLE_NAME;
        END IF;
        NEW.proposed_at := now();
        RETURN NEW;
    END IF;
    -- A decided proposal changes only by an erasure (guard_decision, sql/02),
    -- which keeps its decision's time.
    IF OLD.status <> 'pending' THEN
        NEW.decided_at := OLD.decided_at;
        RETURN NEW;
    END IF;
    IF NEW.decided_by IS NULL OR btrim(NEW.decided_by) = '' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS004',
            MESSAGE = format('proposal %s: a decision names its reviewer', OLD.id),
            HINT = 'accept or reject with a reviewer',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    NEW.decided_at := now();
    RETURN NEW;
END;
$$;
"""

# The stamp functions of revision 0018 (sql/09_transaction_time.sql before this one).
STAMPS_0018_SQL = r"""
CREATE OR REPLACE FUNCTION memstore.stamp_recorded_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.recorded_at IS NULL OR NEW.recorded_at OPERATOR(pg_catalog.<>) pg_catalog.now() THEN
        NEW.recorded_at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.at IS NULL OR NEW.at OPERATOR(pg_catalog.<>) pg_catalog.now() THEN
        NEW.at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_created_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.created_at IS NULL OR NEW.created_at OPERATOR(pg_catalog.<>) pg_catalog.now() THEN
        NEW.created_at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_updated_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.updated_at IS NULL OR NEW.updated_at OPERATOR(pg_catalog.<>) pg_catalog.now() THEN
        NEW.updated_at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_redacted_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.redacted_at IS NULL OR NEW.redacted_at OPERATOR(pg_catalog.<>) pg_catalog.now() THEN
        NEW.redacted_at := pg_catalog.now();
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION memstore.stamp_proposal() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status IS DISTINCT FROM 'pending' OR NEW.decided_by IS NOT NULL
           OR NEW.decided_at IS NOT NULL OR NEW.decision_reason IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'MS004',
                MESSAGE = format('a proposal enters pending and undecided, not %s',
                                 coalesce(NEW.status, 'NULL')),
                HINT = 'propose, then accept or reject it through the review',
                SCHEMA = TG_TABLE_SCHEMA,
                TABLE = TG_TABLE_NAME;
        END IF;
        NEW.proposed_at := now();
        RETURN NEW;
    END IF;
    -- A decided proposal changes only by an erasure (guard_decision, sql/02),
    -- which keeps its decision's time.
    IF OLD.status <> 'pending' THEN
        NEW.decided_at := OLD.decided_at;
        RETURN NEW;
    END IF;
    IF NEW.decided_by IS NULL OR btrim(NEW.decided_by) = '' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS004',
            MESSAGE = format('proposal %s: a decision names its reviewer', OLD.id),
            HINT = 'accept or reject with a reviewer',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    NEW.decided_at := now();
    RETURN NEW;
END;
$$;
"""


def upgrade() -> None:
    op.execute(RESTORE_TIMES_SQL)


def downgrade() -> None:
    op.execute(STAMPS_0018_SQL)
    op.execute("DROP FUNCTION memstore.restore_keeps_time(oid)")
