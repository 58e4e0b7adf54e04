-- Lineage locks (memstore/graph/locks.py). Revise, link, forget, redact,
-- cultivate and the lifecycle law's own writes take them BEFORE they read a
-- memory's status, in the same transaction, so that no other writer can
-- change that status between the check and the write. They are
-- transaction-scoped advisory locks: released at COMMIT or ROLLBACK, never
-- left behind, and open to memstore_app (which may not UPDATE nodes, so
-- SELECT ... FOR UPDATE on a node is not an option).
--
-- Two levels, always taken in this order:
-- * the namespace, one bigint key: SHARED by every writer of single memories,
--   EXCLUSIVE by the writers of a whole namespace (ns.clear) or of more
--   memories than a transaction should hold locks for (a large batch);
-- * each memory, the two-int4 key (namespace, node), EXCLUSIVE, taken in
--   ascending order so two writers of the same pair never wait on each other.
-- The two-int4 space is apart from the bigint one (pg_locks objsubid 2 vs 1),
-- so these keys never meet the tiers' keys (hashtextextended, bigint).

-- lock_nodes --
-- Append runs its branches in order: the namespace first (when asked), then
-- each memory in the order given (ascending; the volatile function runs after
-- the sort).
SELECT 1
FROM (SELECT pg_advisory_xact_lock_shared(hashtextextended('memstore.lineage', :ns))
      WHERE :first) AS whole
UNION ALL
SELECT 1
FROM (SELECT pg_advisory_xact_lock(CAST(:ns_key AS int4), u.k)
      FROM unnest(CAST(:keys AS int4[])) WITH ORDINALITY AS u(k, n)
      ORDER BY u.n) AS each_node

-- lock_namespace --
SELECT pg_advisory_xact_lock(hashtextextended('memstore.lineage', :ns))
