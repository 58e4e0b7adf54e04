-- Export and restore of one namespace (memstore/graph/export.py; docs/operations.md,
-- "Export and restore").
--
-- Export: one COPY … TO STDOUT per section, each row one JSON object built by
-- the server ({"t": section, column: value, …}), so the client only copies
-- bytes to the file and its memory stays flat whatever the namespace's size.
-- CSV with a delimiter and a quote character that JSON text never holds raw
-- (\x02, \x01: to_jsonb escapes control characters as \u0001) writes each
-- object verbatim, one per line; the text format would double every
-- backslash. {ns} is the namespace id, a checked int rendered as a literal
-- (COPY takes no bound parameters); {model} the store's embedder name.
-- Rows go out in id order; supersessions in the order they were made.

-- export_node --
COPY (
    SELECT jsonb_build_object('t', 'node') || to_jsonb(r)
    FROM (SELECT id, kind, node_type, tier, layer, label, content, data, importance,
                 confidence, decay_rate, privacy, protected, subject, scope, source, actor,
                 run_id, observed_at, valid_from, valid_to, recorded_at, content_hash, tags
          FROM memstore.nodes WHERE namespace_id = {ns} ORDER BY id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_edge --
COPY (
    SELECT jsonb_build_object('t', 'edge') || to_jsonb(r)
    FROM (SELECT id, src, dst, relation, weight, inhibitory, confidence, layer, source, actor,
                 run_id, recorded_at
          FROM memstore.edges WHERE namespace_id = {ns} ORDER BY id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_tombstone --
COPY (
    SELECT jsonb_build_object('t', 'tombstone') || to_jsonb(r)
    FROM (SELECT id, target_kind, node_id, edge_id, reason, actor, at
          FROM memstore.tombstones WHERE namespace_id = {ns} ORDER BY id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_supersession --
COPY (
    SELECT jsonb_build_object('t', 'supersession') || to_jsonb(r)
    FROM (SELECT id, old_id, new_id, reason, actor, at
          FROM memstore.supersessions WHERE namespace_id = {ns} ORDER BY at, id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_redaction --
COPY (
    SELECT jsonb_build_object('t', 'redaction') || to_jsonb(r)
    FROM (SELECT id, node_id, reason, actor, content_hash, redacted_at
          FROM memstore.redactions WHERE namespace_id = {ns} ORDER BY id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_node_state --
COPY (
    SELECT jsonb_build_object('t', 'node_state') || to_jsonb(r)
    FROM (SELECT node_id, activation_count, last_activated_at, access_ring, times_applied,
                 success_count, current_confidence, updated_at
          FROM memstore.node_state WHERE namespace_id = {ns} ORDER BY node_id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_edge_state --
COPY (
    SELECT jsonb_build_object('t', 'edge_state') || to_jsonb(r)
    FROM (SELECT edge_id, hebbian_weight, fire_count, last_fired_at, src, dst
          FROM memstore.edge_state WHERE namespace_id = {ns} ORDER BY edge_id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_proposal --
COPY (
    SELECT jsonb_build_object('t', 'proposal') || to_jsonb(r)
    FROM (SELECT id, operation, rationale, status, proposed_by, proposed_at, decided_by,
                 decided_at, decision_reason, evidence
          FROM memstore.proposals WHERE namespace_id = {ns} ORDER BY id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_operation --
COPY (
    SELECT jsonb_build_object('t', 'operation') || to_jsonb(r)
    FROM (SELECT id, batch_id, op, phase, actor, outcome, reason, payload, receipt,
                 recorded_at
          FROM memstore.operations WHERE namespace_id = {ns} ORDER BY id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_confirmation --
COPY (
    SELECT jsonb_build_object('t', 'confirmation') || to_jsonb(r)
    FROM (SELECT id, node_id, at
          FROM memstore.confirmations WHERE namespace_id = {ns} ORDER BY id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_procedure_outcome --
COPY (
    SELECT jsonb_build_object('t', 'procedure_outcome') || to_jsonb(r)
    FROM (SELECT id, node_id, success, episode_node_id, episode_run, note, actor, recorded_at
          FROM memstore.procedure_outcomes WHERE namespace_id = {ns} ORDER BY id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_procedure_role --
COPY (
    SELECT jsonb_build_object('t', 'procedure_role') || to_jsonb(r)
    FROM (SELECT node_id, role, recorded_at
          FROM memstore.procedure_roles WHERE namespace_id = {ns} ORDER BY node_id, role) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_embedding --
-- The store's model only; a redacted node has none (the erasure deleted it).
COPY (
    SELECT jsonb_build_object('t', 'embedding') || to_jsonb(r)
    FROM (SELECT node_id, model, dims, embedding::text AS embedding, source_hash, created_at
          FROM memstore.embeddings
          WHERE namespace_id = {ns} AND model = {model} ORDER BY node_id) r
) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')

-- export_time --
SELECT now()


-- Restore: the file's rows are COPYed, a section at a time, into a staging
-- table as JSON; each section then moves into its table with one INSERT …
-- SELECT that reads the row with jsonb_populate_record (the table's own
-- column types parse the values) and rewrites every id through the id map:
-- new ids are drawn from the tables' identity sequences, in the file's order,
-- and every reference (an edge's ends, a tombstone's target, a supersession's
-- versions, learned state, vectors) is joined through the map. A reference
-- the map does not know becomes NULL and fails the table's NOT NULL or check
-- constraint, so a file whose ids do not hold together restores nothing.
-- Both temporary tables go with the transaction.

-- create_staging --
CREATE TEMP TABLE memstore_restore_rows (n bigint NOT NULL, line jsonb NOT NULL)
    ON COMMIT DROP;
CREATE TEMP TABLE memstore_restore_ids (
    kind text NOT NULL, old_id bigint NOT NULL, new_id bigint NOT NULL,
    PRIMARY KEY (kind, old_id)
) ON COMMIT DROP

-- restoring --
-- The flag the stamp triggers read (sql/09_transaction_time.sql): honoured
-- only for the tables' owner, who logged in as itself.
SET LOCAL memstore.restoring = 'on'

-- keeps_time --
SELECT memstore.restore_keeps_time('memstore.nodes'::regclass)

-- lock_namespace --
-- Two restores into one new namespace: the second waits, then finds it full.
SELECT pg_advisory_xact_lock(hashtextextended('memstore.restore', %(ns)s))

-- holds_rows --
SELECT EXISTS (SELECT 1 FROM memstore.nodes WHERE namespace_id = %(ns)s)
    OR EXISTS (SELECT 1 FROM memstore.operations WHERE namespace_id = %(ns)s)
    OR EXISTS (SELECT 1 FROM memstore.proposals WHERE namespace_id = %(ns)s)

-- copy_staging --
COPY memstore_restore_rows (n, line) FROM STDIN

-- clear_staging --
TRUNCATE memstore_restore_rows

-- map_ids --
-- New ids for the staged rows of one kind, drawn in the file's order.
INSERT INTO memstore_restore_ids (kind, old_id, new_id)
SELECT %(kind)s, s.old_id, nextval(pg_get_serial_sequence(%(table)s, 'id'))
FROM (SELECT (line->>'id')::bigint AS old_id FROM memstore_restore_rows ORDER BY n) s

-- reserve_ids --
-- New ids for rows whose JSON documents must name them before they are staged
-- (proposals, operations): drawn for the given old ids, in their order.
INSERT INTO memstore_restore_ids (kind, old_id, new_id)
SELECT %(kind)s, g.old_id, nextval(pg_get_serial_sequence(%(table)s, 'id'))
FROM unnest(%(old_ids)s::bigint[]) WITH ORDINALITY AS g(old_id, position)
ORDER BY g.position

-- lookup_ids --
SELECT m.kind, m.old_id, m.new_id
FROM unnest(%(kinds)s::text[], %(old_ids)s::bigint[]) AS g(kind, old_id)
JOIN memstore_restore_ids m ON m.kind = g.kind AND m.old_id = g.old_id

-- insert_node --
INSERT INTO memstore.nodes (
    namespace_id, id, kind, node_type, tier, layer, label, content, data, importance,
    confidence, decay_rate, privacy, protected, subject, scope, source, actor, run_id,
    observed_at, valid_from, valid_to, recorded_at, content_hash, tags
) OVERRIDING SYSTEM VALUE
SELECT %(ns)s, m.new_id, r.kind, r.node_type, r.tier, r.layer, r.label, r.content, r.data,
       r.importance, r.confidence, r.decay_rate, r.privacy, r.protected, r.subject, r.scope,
       r.source, r.actor, r.run_id, r.observed_at, r.valid_from, r.valid_to, r.recorded_at,
       r.content_hash, coalesce(r.tags, '{}')  -- a file from before tags carries none
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.nodes, s.line) r
LEFT JOIN memstore_restore_ids m ON m.kind = 'node' AND m.old_id = r.id
ORDER BY s.n

-- insert_edge --
INSERT INTO memstore.edges (
    namespace_id, id, src, dst, relation, weight, inhibitory, confidence, layer, source,
    actor, run_id, recorded_at
) OVERRIDING SYSTEM VALUE
SELECT %(ns)s, m.new_id, a.new_id, b.new_id, r.relation, r.weight, r.inhibitory,
       r.confidence, r.layer, r.source, r.actor, r.run_id, r.recorded_at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.edges, s.line) r
LEFT JOIN memstore_restore_ids m ON m.kind = 'edge' AND m.old_id = r.id
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.src
LEFT JOIN memstore_restore_ids b ON b.kind = 'node' AND b.old_id = r.dst
ORDER BY s.n

-- insert_tombstone --
INSERT INTO memstore.tombstones (
    namespace_id, id, target_kind, node_id, edge_id, reason, actor, at
) OVERRIDING SYSTEM VALUE
SELECT %(ns)s, m.new_id, r.target_kind, a.new_id, b.new_id, r.reason, r.actor, r.at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.tombstones, s.line) r
LEFT JOIN memstore_restore_ids m ON m.kind = 'tombstone' AND m.old_id = r.id
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.node_id
LEFT JOIN memstore_restore_ids b ON b.kind = 'edge' AND b.old_id = r.edge_id
ORDER BY s.n

-- insert_supersession --
-- One row at a time in the order they were made: the lineage trigger checks
-- each against the ones before it.
INSERT INTO memstore.supersessions (namespace_id, old_id, new_id, reason, actor, at)
SELECT %(ns)s, a.new_id, b.new_id, r.reason, r.actor, r.at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.supersessions, s.line) r
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.old_id
LEFT JOIN memstore_restore_ids b ON b.kind = 'node' AND b.old_id = r.new_id
ORDER BY s.n

-- insert_redaction --
INSERT INTO memstore.redactions (namespace_id, node_id, reason, actor, content_hash, redacted_at)
SELECT %(ns)s, a.new_id, r.reason, r.actor, r.content_hash, r.redacted_at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.redactions, s.line) r
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.node_id
ORDER BY s.n

-- insert_node_state --
INSERT INTO memstore.node_state (
    namespace_id, node_id, activation_count, last_activated_at, access_ring, times_applied,
    success_count, current_confidence, updated_at
)
SELECT %(ns)s, a.new_id, r.activation_count, r.last_activated_at, r.access_ring,
       r.times_applied, r.success_count, r.current_confidence, r.updated_at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.node_state, s.line) r
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.node_id
ORDER BY s.n

-- insert_edge_state --
INSERT INTO memstore.edge_state (
    namespace_id, edge_id, hebbian_weight, fire_count, last_fired_at, src, dst
)
SELECT %(ns)s, e.new_id, r.hebbian_weight, r.fire_count, r.last_fired_at, a.new_id, b.new_id
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.edge_state, s.line) r
LEFT JOIN memstore_restore_ids e ON e.kind = 'edge' AND e.old_id = r.edge_id
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.src
LEFT JOIN memstore_restore_ids b ON b.kind = 'node' AND b.old_id = r.dst
ORDER BY s.n

-- insert_proposal --
-- The documents were rewritten by the client (ids they name, through the map).
INSERT INTO memstore.proposals (
    namespace_id, id, operation, rationale, status, proposed_by, proposed_at, decided_by,
    decided_at, decision_reason, evidence
) OVERRIDING SYSTEM VALUE
SELECT %(ns)s, m.new_id, r.operation, r.rationale, r.status, r.proposed_by, r.proposed_at,
       r.decided_by, r.decided_at, r.decision_reason, r.evidence
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.proposals, s.line) r
LEFT JOIN memstore_restore_ids m ON m.kind = 'proposal' AND m.old_id = r.id
ORDER BY s.n

-- insert_operation --
INSERT INTO memstore.operations (
    namespace_id, id, batch_id, op, phase, actor, outcome, reason, payload, receipt,
    recorded_at
) OVERRIDING SYSTEM VALUE
SELECT %(ns)s, m.new_id, r.batch_id, r.op, r.phase, r.actor, r.outcome, r.reason, r.payload,
       r.receipt, r.recorded_at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.operations, s.line) r
LEFT JOIN memstore_restore_ids m ON m.kind = 'operation' AND m.old_id = r.id
ORDER BY s.n

-- insert_confirmation --
INSERT INTO memstore.confirmations (namespace_id, node_id, at)
SELECT %(ns)s, a.new_id, r.at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.confirmations, s.line) r
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.node_id
ORDER BY s.n

-- insert_procedure_outcome --
-- An episode given as a memory is rewritten through the map (one the map does
-- not know becomes -1, which the foreign key refuses, like the NULLs above);
-- one given as a run id is text and stays.
INSERT INTO memstore.procedure_outcomes (
    namespace_id, node_id, success, episode_node_id, episode_run, note, actor, recorded_at
)
SELECT %(ns)s, a.new_id, r.success,
       CASE WHEN r.episode_node_id IS NOT NULL THEN coalesce(b.new_id, -1) END,
       r.episode_run, r.note, r.actor, r.recorded_at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.procedure_outcomes, s.line) r
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.node_id
LEFT JOIN memstore_restore_ids b ON b.kind = 'node' AND b.old_id = r.episode_node_id
ORDER BY s.n

-- insert_procedure_role --
INSERT INTO memstore.procedure_roles (namespace_id, node_id, role, recorded_at)
SELECT %(ns)s, a.new_id, r.role, r.recorded_at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.procedure_roles, s.line) r
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.node_id
ORDER BY s.n

-- insert_embedding --
INSERT INTO memstore.embeddings (
    namespace_id, node_id, model, dims, embedding, source_hash, created_at
)
SELECT %(ns)s, a.new_id, r.model, r.dims, r.embedding, r.source_hash, r.created_at
FROM memstore_restore_rows s
CROSS JOIN LATERAL jsonb_populate_record(NULL::memstore.embeddings, s.line) r
LEFT JOIN memstore_restore_ids a ON a.kind = 'node' AND a.old_id = r.node_id
WHERE r.model = %(model)s
ORDER BY s.n

-- unembedded --
-- The next batch (by id, after %(after)s) of restored memories the store's model
-- has no vector for (none were in the file, or they were for another model):
-- embedded before the commit. Keyset batches, not a cursor held open while the
-- vectors go in: each batch is a fresh range scan of pk_nodes.
SELECT n.id, n.content
FROM memstore.nodes n
WHERE n.namespace_id = %(ns)s AND n.id > %(after)s
  AND NOT EXISTS (SELECT 1 FROM memstore.redactions r
                  WHERE r.namespace_id = %(ns)s AND r.node_id = n.id)
  AND NOT EXISTS (SELECT 1 FROM memstore.embeddings e
                  WHERE e.namespace_id = %(ns)s AND e.node_id = n.id AND e.model = %(model)s)
ORDER BY n.id
LIMIT %(limit)s

-- audit --
-- The restore's own row in the audit log, stamped now() like any other.
SELECT memstore.record_operations(%(ns)s, %(rows)s::jsonb)

-- snapshot --
-- An export's transaction: one snapshot for every section, writing nothing.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY
