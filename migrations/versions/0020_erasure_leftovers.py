"""The embeddings cache keeps no vector of an erased memory.

A rebuild (ns.rebuild_embeddings, memstore embed rebuild) reads a node's
text, computes its vector and writes it in the same transaction, but an
erasure committed in between left the vector, and a plain sha256 of the erased
text as its source_hash, in the cache of the erased node. The BEFORE INSERT OR
UPDATE trigger keep_no_erased_vector on memstore.embeddings locks the node
row (FOR KEY SHARE, so it waits for an erasure in flight) and drops a vector
of a redacted node.

A frozen copy of the trigger as sql/03_redaction.sql defines it at this
revision.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02

"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# sql/03_redaction.sql: keep_no_erased_vector()
KEEP_NO_ERASED_VECTOR_SQL = r"""
-- The embeddings cache keeps no vector of an erased version. A vector is
-- computed from a node's text outside the transaction that erases it: a
-- rebuild reads the text, an erasure commits, then the rebuild writes the
-- vector (and, as its source_hash, a plain sha256 of the erased text). This
-- trigger locks the node row FOR KEY SHARE, as the foreign key's check would,
-- so it waits for an erasure in flight (redact_lineage locks the versions FOR
-- UPDATE), and then, seeing the committed redactions row, drops the vector
-- quietly: the text it was computed from is gone. An erasure that starts after
-- the vector was written waits on the same lock and deletes it.
-- SECURITY DEFINER: the service role may not lock nodes (no UPDATE on them),
-- and the row may be above the transaction's privacy ceiling.
CREATE OR REPLACE FUNCTION memstore.keep_no_erased_vector() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM 1 FROM memstore.nodes n
    WHERE n.namespace_id = NEW.namespace_id AND n.id = NEW.node_id
    FOR KEY SHARE;
    IF EXISTS (SELECT 1 FROM memstore.redactions r
               WHERE r.namespace_id = NEW.namespace_id AND r.node_id = NEW.node_id) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION memstore.keep_no_erased_vector() FROM PUBLIC;

CREATE OR REPLACE TRIGGER keep_no_erased_vector BEFORE INSERT OR UPDATE ON memstore.embeddings
    FOR EACH ROW EXECUTE FUNCTION memstore.keep_no_erased_vector();
"""


def upgrade() -> None:
    op.execute(KEEP_NO_ERASED_VECTOR_SQL)


def downgrade() -> None:
    op.execute("DROP TRIGGER keep_no_erased_vector ON memstore.embeddings")
    op.execute("DROP FUNCTION memstore.keep_no_erased_vector()")
