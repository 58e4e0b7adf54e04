-- Transaction time belongs to the database (docs/security.md, "Time").
--
-- as_of reads ask "what did the store know at T?": they compare T with the
-- transaction times below, so a caller that could choose them could make the
-- store claim it knew something before it did (a memory recorded "in 2001", a
-- tombstone or supersession back-dated under an earlier answer). These
-- triggers overwrite every transaction-time column with now() whatever the
-- INSERT says, for every role (the owner and superusers included: only a role
-- that can disable triggers can get past them, and `memstore db check` sees
-- that).
--
-- now(), not clock_timestamp(): now() is the transaction's start, the same for
-- every row it writes, so a revision's new node and its supersession, or a
-- batch's nodes and its operations rows, share one instant and an as_of read
-- sees all of a transaction or none of it. It is also the default the columns
-- always had, and what memstore.tiers.common.now() reads back.
--
-- Transaction time (set here)            | world time (the caller's, kept as given)
-- namespaces.created_at                  | nodes.observed_at
-- nodes.recorded_at, edges.recorded_at   | nodes.valid_from, nodes.valid_to
-- tombstones.at, supersessions.at        |
-- operations.recorded_at                 | learned state, written by the service's
-- proposals.proposed_at, decided_at      | activation learning (not read by as_of):
-- activations.at                         | node_state.last_activated_at, access_ring;
-- redactions.redacted_at                 | edge_state.last_fired_at
-- node_state.updated_at                  |
-- embeddings.created_at (a cache)        |
--
-- The functions assign only when the value differs: the column default has
-- usually given now() already, and a PL/pgSQL trigger that leaves NEW alone
-- returns the row as it came, where an assignment rebuilds it. Measured with
-- EXPLAIN ANALYZE on a 50k-node INSERT ... SELECT: about 1 us a row (2 us
-- assigning unconditionally), a fifth of what the namespace foreign key's
-- check costs and about 5% of the insert.
--
-- The stamp functions name pg_catalog's now() and <> explicitly, and the
-- proposal function pins its search_path: they run with the caller's rights,
-- so an unqualified name would be looked up on a search_path the caller sets
-- (a caller with CREATE anywhere could otherwise shadow now()). The stamp
-- functions do not pin it with SET, which would save and restore a setting
-- on every row.
--
-- Trigger names start with "stamp_": BEFORE triggers of one table fire in name
-- order, so on proposals the decision guard (guard_decision, sql/02) refuses a
-- forbidden change before stamp_proposal looks at it.

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

CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.namespaces
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_created_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.nodes
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.edges
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.operations
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.redactions
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_redacted_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT OR UPDATE ON memstore.node_state
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_updated_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT OR UPDATE ON memstore.embeddings
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_created_at();

-- proposals: a proposal enters pending, undecided, at now(). An INSERT that
-- says otherwise (already accepted, a decision, a reviewer) is refused rather
-- than quietly corrected: it is a caller trying to skip the review.
-- A decision (pending -> accepted | rejected, once: guard_decision in sql/02)
-- names its reviewer and is dated now().
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

CREATE OR REPLACE TRIGGER stamp_proposal BEFORE INSERT OR UPDATE ON memstore.proposals
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_proposal();

-- operations: the audit log is written by memstore's own code only. The
-- service role has no INSERT on memstore.operations (memstore/db/roles.py);
-- it records a batch's rows through this function, which runs as the
-- migrating role (SECURITY DEFINER) and so is not confined by row-level
-- security: it checks the namespace itself, which must be the one the
-- transaction declared. p_rows is a JSON array of objects with the keys
-- batch_id, op, phase, actor, outcome, reason, payload, receipt; the ids come
-- back in the order of the array. recorded_at is stamped by the trigger above.
CREATE OR REPLACE FUNCTION memstore.record_operations(p_namespace_id bigint, p_rows jsonb)
RETURNS SETOF bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_namespace_id IS NULL OR p_namespace_id IS DISTINCT FROM
       nullif(current_setting('memstore.namespace_id', true), '')::bigint THEN
        RAISE EXCEPTION USING
            ERRCODE = '42501',
            MESSAGE = format('operations of namespace %s may be recorded only in a transaction'
                             ' that declared it', coalesce(p_namespace_id::text, 'NULL')),
            TABLE = 'operations';
    END IF;
    IF jsonb_typeof(p_rows) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'record_operations takes a JSON array of operations rows',
            TABLE = 'operations';
    END IF;
    RETURN QUERY
    WITH inserted AS (
        INSERT INTO memstore.operations AS o
            (namespace_id, batch_id, op, phase, actor, outcome, reason, payload, receipt)
        SELECT p_namespace_id, r.batch_id, r.op, r.phase, r.actor, r.outcome, r.reason,
               coalesce(r.payload, '{}'::jsonb), coalesce(r.receipt, '{}'::jsonb)
        FROM jsonb_array_elements(p_rows) WITH ORDINALITY AS g(item, position),
             jsonb_to_record(g.item) AS r(batch_id text, op text, phase text, actor text,
                                          outcome text, reason text, payload jsonb,
                                          receipt jsonb)
        ORDER BY g.position
        RETURNING o.id
    )
    -- Identity values are drawn in insertion order: by id is the array's order.
    SELECT inserted.id FROM inserted ORDER BY inserted.id;
END;
$$;

REVOKE ALL ON FUNCTION memstore.record_operations(bigint, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.record_operations(bigint, jsonb) TO CURRENT_USER;
