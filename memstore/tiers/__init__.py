"""Memory tiers: timeline, scratchpad, lessons, procedures, consolidation — profiles over one graph.

Each tier is a small class over a :class:`~memstore.namespace.Namespace`
(``ns.timeline``, ``ns.scratchpad``, ``ns.lessons``, ``ns.procedures``,
``ns.consolidation``); see docs/tiers.md.
"""
