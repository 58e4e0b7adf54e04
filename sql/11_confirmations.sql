-- Confirmations: a later observation that confirmed a memory (docs/recall.md,
-- "Confirmation"). A row says "node N was observed again at T"; a node's
-- last_confirmed_at is its newest row's time. They are written by
-- ns.confirm(node_id) and by ns.remember of content the namespace already holds
-- as a current memory.
--
-- Append-only like the other truth tables: a confirmation is never changed or
-- removed. It holds no caller's words (no reason, actor or source), so an
-- erasure has nothing to blank here: what is erased is the node's content.
-- Its time is transaction time, set by the database (sql/09), never the caller.

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.confirmations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'confirmations are append-only: confirm the memory again');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.confirmations
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'confirmations are append-only: confirm the memory again');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.confirmations
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'confirmations are append-only: confirm the memory again');

CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.confirmations
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_at();

-- Row-level security as for every table (sql/07_row_security.sql).
ALTER TABLE memstore.confirmations ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.confirmations
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);
