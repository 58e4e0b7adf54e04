"""Every public sync verb has an async twin with the same signature; the generated module
is what the generator writes from the sync classes as they are now."""

from __future__ import annotations

import inspect
import re
import typing
from functools import cached_property
from typing import Any

import pytest

from memstore.aio import _surface
from memstore.aio._offload import AsyncContext, Offloaded
from memstore.aio.generate import TARGET, Surface, generated
from memstore.store import MemoryStore

PAIRS = [
    (cls, typing.get_args(cls.__orig_bases__[0])[0])  # type: ignore[attr-defined]
    for cls in vars(_surface).values()
    if inspect.isclass(cls) and issubclass(cls, Offloaded) and cls.__module__ == _surface.__name__
]
# Only what hands out raw SQLAlchemy objects (or the objects behind them) stays sync-only,
# and the facade's embedder (its embed() is CPU work that would block a loop) and settings
# (configuration, not a verb), both reachable through ``.sync``.
SYNC_ONLY_REASON = re.compile(
    r"Connection|Engine|SQLAlchemy|an attribute of type|property of type (Embedder|Settings)"
)


def test_the_generated_module_is_up_to_date():
    assert TARGET.read_text() == generated(), "run: python -m memstore.aio.generate"


def test_every_service_class_reached_from_the_store_has_a_twin():
    assert {sync for _, sync in PAIRS} == set(Surface().order)
    assert MemoryStore in {sync for _, sync in PAIRS}


def _public(cls: type) -> list[str]:
    names = {name for klass in cls.__mro__[:-1] for name in vars(klass)}
    return sorted(name for name in names if not name.startswith("_"))


@pytest.mark.parametrize("twin, sync", PAIRS, ids=[cls.__name__ for cls, _ in PAIRS])
def test_every_public_verb_has_an_async_twin_with_the_same_signature(twin, sync):
    excluded = {
        entry.name: entry.excluded
        for entry in Surface().entries[sync]
        if entry.excluded is not None
    }
    for name in _public(sync):
        member = inspect.getattr_static(sync, name)
        if name in excluded:
            assert SYNC_ONLY_REASON.search(excluded[name]), (name, excluded[name])
            assert not hasattr(twin, name)
            continue
        assert hasattr(twin, name), f"{twin.__name__} has no {name}: regenerate"
        if isinstance(member, property | cached_property | staticmethod):
            continue
        ours, theirs = (
            inspect.signature(getattr(twin, name)),
            inspect.signature(getattr(sync, name)),
        )
        assert list(ours.parameters.values()) == list(theirs.parameters.values()), name
        assert getattr(twin, name).__doc__ == getattr(sync, name).__doc__
        returns = ours.return_annotation
        if isinstance(returns, str) and returns.startswith("AsyncContext["):
            continue  # an async context manager: checked below
        assert inspect.iscoroutinefunction(getattr(twin, name)), name
        if returns != theirs.return_annotation:  # a service object comes back as its twin
            assert returns == f"Async{theirs.return_annotation}", name


def test_context_managers_become_async_ones():
    from memstore.aio import AsyncNamespace

    transaction: Any = AsyncNamespace.transaction
    assert not inspect.iscoroutinefunction(transaction)
    assert inspect.signature(transaction).return_annotation == (
        "AsyncContext[AsyncNamespaceTransaction]"
    )
    assert hasattr(AsyncContext, "__aenter__") and hasattr(AsyncContext, "__aexit__")


def test_open_takes_the_parameters_of_the_sync_open():
    from memstore import AsyncMemoryStore

    ours = inspect.signature(AsyncMemoryStore.open)
    assert ours.parameters == inspect.signature(MemoryStore.open).parameters
    assert ours.return_annotation == "AsyncMemoryStore"
    assert inspect.iscoroutinefunction(AsyncMemoryStore.open)
