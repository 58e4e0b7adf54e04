"""The memory graph: nodes, edges, supersession, tombstones, lineage, erasure."""
