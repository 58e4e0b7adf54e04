-- Maintenance and procedure outcomes (docs/operations.md "Maintenance",
-- docs/tiers.md "Procedures").
--
-- Truth and telemetry. Truth tables (nodes, edges, tombstones, supersessions,
-- operations, redactions, proposals, procedure_outcomes, procedure_roles,
-- maintenance_runs) keep every row for ever. The one telemetry table is
-- activations, the access log that activate(learn=True) writes: what learning
-- needs from it already lives in node_state and edge_state, so after a
-- retention (MEMSTORE_ACTIVATION_RETENTION_DAYS) a maintenance pass
-- summarises its old rows into activation_summaries (per namespace, UTC day
-- and node) and only then removes them, in one statement.
--
-- The removal passes the append-only guard the way an erasure does: by the
-- role it runs as. memstore.summarise_activations is SECURITY DEFINER, owned
-- by memstore_maintainer, a role nobody logs in as; the activations guard lets
-- a DELETE through only for current_user = memstore_maintainer. The service
-- (memstore_app) may not DELETE any truth or telemetry row itself; it may
-- EXECUTE the function, which removes nothing but rows older than the cutoff
-- it is given, of the namespace the transaction declared (row-level security
-- confines the maintainer as it confines the service). TRUNCATE stays refused.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memstore_maintainer') THEN
        CREATE ROLE memstore_maintainer NOLOGIN;
    END IF;
END;
$$;

GRANT USAGE ON SCHEMA memstore TO memstore_maintainer;
GRANT SELECT, DELETE ON memstore.activations TO memstore_maintainer;
GRANT SELECT, INSERT, UPDATE ON memstore.activation_summaries TO memstore_maintainer;

-- Row-level security, as for every table (sql/07_row_security.sql).
ALTER TABLE memstore.procedure_outcomes ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.procedure_outcomes
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.procedure_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.procedure_roles
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.activation_summaries ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.activation_summaries
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

ALTER TABLE memstore.maintenance_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_only ON memstore.maintenance_runs
    USING (namespace_id = nullif(current_setting('memstore.namespace_id', true), '')::bigint);

-- Transaction time belongs to the database (sql/09_transaction_time.sql).
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.procedure_outcomes
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.procedure_roles
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();
CREATE OR REPLACE TRIGGER stamp_time BEFORE INSERT ON memstore.maintenance_runs
    FOR EACH ROW EXECUTE FUNCTION memstore.stamp_recorded_at();

-- The append-only law for the new truth tables (sql/01_append_only.sql).
-- procedure_outcomes hold a caller's words about a procedure version and its
-- episode (note, run id, actor): an erasure of either blanks them
-- (sql/03_redaction.sql), recognised like the erasure's other UPDATEs by the
-- role it runs as and by writing exactly these values.
GRANT SELECT, UPDATE ON memstore.procedure_outcomes TO memstore_redactor;

CREATE OR REPLACE FUNCTION memstore.erased_outcome(p_row jsonb) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_build_object(
        'note', NULL,
        'episode_run', CASE WHEN p_row->>'episode_run' IS NULL THEN NULL ELSE 'redacted' END,
        'actor', memstore.erased_text((p_row->>'namespace_id')::bigint, p_row->>'actor'))
$$;
REVOKE ALL ON FUNCTION memstore.erased_outcome(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.erased_outcome(jsonb) TO memstore_redactor;

CREATE OR REPLACE FUNCTION memstore.guard_outcome_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'memstore_redactor' THEN
        IF to_jsonb(NEW) = to_jsonb(OLD) || memstore.erased_outcome(to_jsonb(OLD)) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'MS001',
        MESSAGE = format('UPDATE on %s refused: procedure outcomes are append-only:'
                         ' record a new outcome', TG_TABLE_NAME),
        HINT = 'record a new outcome',
        SCHEMA = TG_TABLE_SCHEMA,
        TABLE = TG_TABLE_NAME;
END;
$$;

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.procedure_outcomes
    FOR EACH ROW EXECUTE FUNCTION memstore.guard_outcome_update();

-- Each new erasure record (one per erased version, written by
-- memstore.redact_lineage as memstore_redactor) blanks the outcomes of that
-- version and the outcomes whose episode it was.
CREATE OR REPLACE FUNCTION memstore.erase_outcomes() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE memstore.procedure_outcomes o
    SET note = NULL,
        episode_run = CASE WHEN o.episode_run IS NULL THEN NULL ELSE 'redacted' END,
        actor = memstore.erased_text(o.namespace_id, o.actor)
    WHERE o.namespace_id = NEW.namespace_id
      AND (o.node_id = NEW.node_id OR o.episode_node_id = NEW.node_id)
      AND (o.note IS NOT NULL OR o.episode_run IS DISTINCT FROM 'redacted'
           OR o.actor IS DISTINCT FROM memstore.erased_text(o.namespace_id, o.actor));
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER erase_outcomes AFTER INSERT ON memstore.redactions
    FOR EACH ROW EXECUTE FUNCTION memstore.erase_outcomes();
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.procedure_outcomes
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'procedure outcomes are append-only: record a new outcome');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.procedure_outcomes
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'procedure outcomes are append-only: record a new outcome');

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.procedure_roles
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'procedure roles are append-only: refine the procedure with new roles');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.procedure_roles
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'procedure roles are append-only: refine the procedure with new roles');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.procedure_roles
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'procedure roles are append-only: refine the procedure with new roles');

CREATE OR REPLACE TRIGGER no_update BEFORE UPDATE ON memstore.maintenance_runs
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'maintenance runs are append-only: a pass records a new run');
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.maintenance_runs
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'maintenance runs are append-only: a pass records a new run');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.maintenance_runs
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'maintenance runs are append-only: a pass records a new run');

-- Summaries are learned numbers: merged into, never removed.
CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.activation_summaries
    FOR EACH ROW EXECUTE FUNCTION memstore.refuse_change(
        'activation summaries are never deleted: a later pass merges into them');
CREATE OR REPLACE TRIGGER no_truncate BEFORE TRUNCATE ON memstore.activation_summaries
    FOR EACH STATEMENT EXECUTE FUNCTION memstore.refuse_change(
        'activation summaries are never deleted: a later pass merges into them');

-- activations: DELETE passes only inside memstore.summarise_activations
-- (recognised by the role it runs as, like the erasure's UPDATE).
-- TG_ARGV[0]: the sanctioned alternative.
CREATE OR REPLACE FUNCTION memstore.guard_telemetry_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'memstore_maintainer' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION USING
        ERRCODE = 'MS001',
        MESSAGE = format('%s on %s refused: %s', TG_OP, TG_TABLE_NAME, TG_ARGV[0]),
        HINT = TG_ARGV[0],
        SCHEMA = TG_TABLE_SCHEMA,
        TABLE = TG_TABLE_NAME;
END;
$$;

CREATE OR REPLACE TRIGGER no_delete BEFORE DELETE ON memstore.activations
    FOR EACH ROW EXECUTE FUNCTION memstore.guard_telemetry_delete(
        'activations are append-only: the access log is never rewritten; ns.maintain() summarises rows past their retention');

-- Summarise the declared namespace's activations recorded before p_before into
-- activation_summaries, and remove them: both or neither (one statement).
-- Answers how many rows were summarised and how many summary rows they touched.
CREATE OR REPLACE FUNCTION memstore.summarise_activations(p_namespace_id bigint,
                                                          p_before timestamptz)
RETURNS TABLE (summarised bigint, summaries bigint)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM memstore.activations a
        WHERE a.namespace_id = p_namespace_id AND a.at < p_before
        RETURNING a.namespace_id, a.node_id, a.at, a.strength
    ), merged AS (
        INSERT INTO memstore.activation_summaries AS s
               (namespace_id, day, node_id, activations, strength_sum, strength_max,
                first_at, last_at)
        SELECT g.namespace_id, (g.at AT TIME ZONE 'UTC')::date, g.node_id, count(*),
               sum(g.strength), max(g.strength), min(g.at), max(g.at)
        FROM gone g
        GROUP BY g.namespace_id, (g.at AT TIME ZONE 'UTC')::date, g.node_id
        ON CONFLICT (namespace_id, day, node_id) DO UPDATE
        SET activations = s.activations + excluded.activations,
            strength_sum = s.strength_sum + excluded.strength_sum,
            strength_max = greatest(s.strength_max, excluded.strength_max),
            first_at = least(s.first_at, excluded.first_at),
            last_at = greatest(s.last_at, excluded.last_at)
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM merged);
$$;

REVOKE ALL ON FUNCTION memstore.summarise_activations(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memstore.summarise_activations(bigint, timestamptz) TO CURRENT_USER;
ALTER FUNCTION memstore.summarise_activations(bigint, timestamptz) OWNER TO memstore_maintainer;
