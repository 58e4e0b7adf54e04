-- Lineage rules: a node is superseded at most once and never into a cycle; a
-- target is tombstoned at most once; a proposal is decided once.
-- Unique indexes (uq_supersessions_old, uq_tombstones_node/_edge) back these
-- checks when two writers race; the checks give the readable message.

CREATE OR REPLACE FUNCTION memstore.check_supersession() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    current_version bigint;
BEGIN
    -- One supersession at a time per namespace: two concurrent links could
    -- otherwise each pass the cycle check and close a cycle together.
    PERFORM pg_advisory_xact_lock(hashtextextended('memstore.supersessions', NEW.namespace_id));

    IF EXISTS (SELECT 1 FROM memstore.supersessions s
               WHERE s.namespace_id = NEW.namespace_id AND s.old_id = NEW.old_id) THEN
        WITH RECURSIVE chain(id, depth) AS (
            SELECT NEW.old_id, 0
            UNION
            SELECT s.new_id, c.depth + 1
            FROM memstore.supersessions s
            JOIN chain c ON s.old_id = c.id
            WHERE s.namespace_id = NEW.namespace_id
        )
        SELECT id INTO current_version FROM chain ORDER BY depth DESC LIMIT 1;
        RAISE EXCEPTION USING
            ERRCODE = 'MS002',
            MESSAGE = format('node %s is already superseded; its current version is node %s',
                             NEW.old_id, current_version),
            HINT = 'supersessions are append-only: revise the current version instead',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;

    IF EXISTS (
        WITH RECURSIVE chain(id) AS (
            SELECT NEW.new_id
            UNION
            SELECT s.new_id
            FROM memstore.supersessions s
            JOIN chain c ON s.old_id = c.id
            WHERE s.namespace_id = NEW.namespace_id
        )
        SELECT 1 FROM chain WHERE id = NEW.old_id
    ) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS002',
            MESSAGE = format('superseding node %s by node %s would close a cycle',
                             NEW.old_id, NEW.new_id),
            HINT = 'supersessions are append-only: a lineage only moves forward',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER check_supersession BEFORE INSERT ON memstore.supersessions
    FOR EACH ROW EXECUTE FUNCTION memstore.check_supersession();

CREATE OR REPLACE FUNCTION memstore.check_tombstone() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM memstore.tombstones t
               WHERE t.namespace_id = NEW.namespace_id
                 AND t.target_kind = NEW.target_kind
                 AND (t.node_id = NEW.node_id OR t.edge_id = NEW.edge_id)) THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS003',
            MESSAGE = format('%s %s is already tombstoned', NEW.target_kind,
                             coalesce(NEW.node_id, NEW.edge_id)),
            HINT = 'tombstones are append-only: a target is tombstoned once',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER check_tombstone BEFORE INSERT ON memstore.tombstones
    FOR EACH ROW EXECUTE FUNCTION memstore.check_tombstone();

-- proposals: status moves pending -> accepted | rejected, once; nothing else
-- about a proposal changes, and a proposal is never deleted. The one exception
-- is the audited erasure (memstore.redact_lineage, running as
-- memstore_redactor): it writes what memstore.erasure_of says, rejects a
-- pending proposal and erases a decided one's decision.
CREATE OR REPLACE FUNCTION memstore.guard_proposal_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'memstore_redactor' THEN
        IF to_jsonb(NEW) - ARRAY['status', 'decided_by', 'decided_at', 'decision_reason']
           = (to_jsonb(OLD) - ARRAY['status', 'decided_by', 'decided_at', 'decision_reason'])
             || memstore.erasure_of('proposals', to_jsonb(OLD))
           AND ((OLD.status = 'pending' AND NEW.status = 'rejected')
                OR (OLD.status <> 'pending' AND NEW.status = OLD.status
                    AND NEW.decided_at = OLD.decided_at AND NEW.decision_reason IS NULL
                    AND NEW.decided_by IS NOT DISTINCT FROM
                        memstore.erased_text(OLD.namespace_id, OLD.decided_by)))
        THEN
            NEW.decided_at := coalesce(NEW.decided_at, now());
            RETURN NEW;
        END IF;
    END IF;
    IF OLD.status <> 'pending' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS004',
            MESSAGE = format('proposal %s was already %s: a decision is final', OLD.id, OLD.status),
            HINT = 'propose again to reconsider',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    IF NEW.status NOT IN ('accepted', 'rejected') THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS004',
            MESSAGE = format('proposal %s may only move from pending to accepted or rejected', OLD.id),
            HINT = 'accept or reject the proposal',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    IF to_jsonb(NEW) - ARRAY['status', 'decided_by', 'decided_at', 'decision_reason']
       <> to_jsonb(OLD) - ARRAY['status', 'decided_by', 'decided_at', 'decision_reason'] THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MS004',
            MESSAGE = format('proposal %s: only its decision may change', OLD.id),
            HINT = 'propose again with the changed operation',
            SCHEMA = TG_TABLE_SCHEMA,
            TABLE = TG_TABLE_NAME;
    END IF;
    NEW.decided_at := coalesce(NEW.decided_at, now());
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER guard_decision BEFORE UPDATE ON memstore.proposals
    FOR EACH ROW EXECUTE FUNCTION memstore.guard_proposal_update();
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.proposals
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'proposals are never deleted: reject a pending proposal instead');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.proposals
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'proposals are never deleted: reject a pending proposal instead');
