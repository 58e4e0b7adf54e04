"""What the :class:`~memstore.namespace.Namespace` facade delegates to.

:mod:`~memstore.services.scope` is the namespace as the tiers and the lifecycle
see it (id, name, engine, settings, embedder, transactions, vectors);
:mod:`~memstore.services.recall`, :mod:`~memstore.services.activation` and
:mod:`~memstore.services.ingest` are the verbs that keep state of their own
(recall's statistics and term counts) or need more than one transaction.
Services build no SQL: their statements live in the core modules and the
packaged .sql files (tests/unit/test_layers.py).
"""
