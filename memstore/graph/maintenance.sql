-- A maintenance pass's statements (memstore/graph/maintenance.py; the pass
-- itself is memstore/services/maintenance.py, docs/operations.md).

-- lock --
-- One pass per namespace at a time: a second waits here until the first
-- commits, then finds nothing due. Transaction-scoped, so never left behind.
SELECT pg_advisory_xact_lock(hashtextextended('memstore.maintain', :ns))

-- decayed_through --
-- How far decay has been applied: the newest mark of a pass that decayed.
-- By time, not by id (ids are not ordered across the nodes of a cluster).
SELECT max(r.decayed_through) AS decayed_through
FROM memstore.maintenance_runs r
WHERE r.namespace_id = :ns

-- summarise --
-- Telemetry past its retention into activation_summaries, then removed
-- (sql/12_maintenance.sql: the only DELETE the activations guard allows).
SELECT s.summarised, s.summaries
FROM memstore.summarise_activations(:ns, :before) AS s

-- record_run --
INSERT INTO memstore.maintenance_runs (namespace_id, decay_steps, decayed_through, report)
VALUES (:ns, :steps, :decayed_through, CAST(:report AS jsonb))
