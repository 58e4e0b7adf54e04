"""Framework adapters: thin shells over memstore's public API (docs/integrations.md).

Each adapter imports its framework lazily (an install extra), so ``import memstore``
and the core never need it: ``pip install 'memstore[langgraph]'`` for
:mod:`memstore.integrations.langgraph`.
"""
