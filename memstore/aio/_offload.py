"""The machinery of the async API: sync verbs run on worker threads, awaited from a loop.

Each async class (generated in :mod:`memstore.aio._surface`) holds the sync object it
stands for and a :class:`Runner` that runs its verbs. The descriptors below turn one
sync member into its async twin: the parameters are the sync method's own (a
``ParamSpec``, so mypy checks calls against the sync signature and nothing is copied),
the result the same object, or the async view of a service object (a namespace, a tier,
a transaction).

Why threads and not an async driver: a verb is validation, embedding and one or two
round trips written once, in the sync services; running it on a thread keeps one source
and leaves the loop free while it waits (docs/async.md, docs/benchmark-notes.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import queue
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from memstore.errors import MemstoreError, StoreClosedError

S = TypeVar("S")
T = TypeVar("T")
W = TypeVar("W")
P = ParamSpec("P")
R = TypeVar("R")

Awaitable = Coroutine[Any, Any, T]


class TransactionOverError(MemstoreError):
    """A verb of an async transaction was awaited after its ``async with`` block ended."""


class Runner:
    """Where verbs run: a bounded pool of threads (a store's), or one thread (a transaction's)."""

    closed_message = "this AsyncMemoryStore is closed"

    def __init__(self, workers: int):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memstore-aio")
        self.workers = workers
        self.closed = False

    def submit(self, call: Callable[[], T]) -> Future[T]:
        if self.closed:
            raise StoreClosedError(self.closed_message)
        return self._pool.submit(call)

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on a worker thread, with the caller's context variables.

        A cancelled await cancels a call that has not started; one that has started
        runs to its end (its transaction commits or rolls back in the thread) and
        its result is dropped.
        """
        context = contextvars.copy_context()
        future = self.submit(functools.partial(context.run, fn, *args, **kwargs))
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Refuse new calls; the running ones finish on their threads."""
        self.closed = True
        self._pool.shutdown(wait=False)


class _Leave(BaseException):
    """Thrown into a transaction's ``with`` on its thread: the block failed or was cancelled,
    so the transaction rolls back (the caller's own exception stays with the caller)."""


class Session(Runner):
    """One dedicated thread that enters a sync context manager, runs the calls made on
    the value it yields, and leaves it: a transaction lives on the thread that opened it
    (its connection, and the thread-local id of a namespace it creates)."""

    closed_message = "this transaction is over: its async with block has ended"

    def __init__(self, enter: Callable[[], AbstractContextManager[Any]]):
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | _Leave | None]
        self._calls = queue.SimpleQueue()
        self._entered: Future[Any] = Future()
        self._left: Future[bool] = Future()
        self._closing = threading.Lock()  # a call is queued before the end, or refused
        self.workers = 1
        self.closed = False
        threading.Thread(
            target=self._serve, args=(enter,), name="memstore-aio-tx", daemon=True
        ).start()

    def _serve(self, enter: Callable[[], AbstractContextManager[Any]]) -> None:
        try:
            with enter() as value:
                self._entered.set_result(value)
                while (item := self._calls.get()) is not None:
                    if isinstance(item, _Leave):
                        raise item
                    call, future = item
                    if future.set_running_or_notify_cancel():
                        try:
                            future.set_result(call())
                        except BaseException as exc:
                            future.set_exception(exc)
        except _Leave:
            self._left.set_result(False)  # rolled back; the block's exception propagates
        except BaseException as exc:
            if not self._entered.done():
                self._entered.set_exception(exc)
            self._left.set_exception(exc)
        else:
            self._left.set_result(False)
        finally:
            with self._closing:
                self.closed = True
            self._drain()

    def _drain(self) -> None:
        """Fail the calls that arrived after the block ended (they would wait forever)."""
        while True:
            try:
                item = self._calls.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, tuple) and item[1].set_running_or_notify_cancel():
                item[1].set_exception(TransactionOverError(self.closed_message))

    def submit(self, call: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._closing:
            if self.closed:
                raise TransactionOverError(self.closed_message)
            self._calls.put((call, future))
        return future

    def close(self) -> None:
        self.closed = True

    async def enter(self) -> Any:
        try:
            return await asyncio.shield(asyncio.wrap_future(self._entered))
        except asyncio.CancelledError:
            self.closed = True
            self._calls.put(_Leave())  # once entered, the thread rolls back and ends
            raise

    async def leave(self, failed: bool) -> bool:
        """End the block: commit (``failed`` False) or roll back. The thread finishes
        either even if this await is cancelled: a transaction is never left half done."""
        self.closed = True
        self._calls.put(_Leave() if failed else None)
        return await asyncio.shield(asyncio.wrap_future(self._left))


class Offloaded(Generic[S]):
    """The async view of a sync object ``sync``; its verbs run on ``runner``."""

    def __init__(self, sync: S, runner: Runner):
        self._sync = sync
        self._runner = runner

    @property
    def sync(self) -> S:
        """The sync object behind this one, for code that runs on a thread of its own."""
        return self._sync

    def __repr__(self) -> str:
        return f"<async {self._sync!r}>"


def _signature_of(fn: Callable[..., Any], returns: object = inspect.Parameter.empty) -> Any:
    signature = inspect.signature(fn)
    if returns is not inspect.Parameter.empty:
        signature = signature.replace(return_annotation=returns)
    return signature


class _Member(Generic[S, P, R]):
    """A sync method's async twin: same parameters, docs and signature; awaits its result."""

    def __init__(self, fn: Callable[Concatenate[S, P], R]):
        self._fn = fn
        self._name = getattr(fn, "__name__", "")

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        method = self._method()
        functools.update_wrapper(method, self._fn, assigned=("__doc__", "__module__"))
        method.__name__ = name
        method.__qualname__ = f"{owner.__qualname__}.{name}"
        method.__signature__ = _signature_of(self._fn, self._returns())  # type: ignore[attr-defined]
        self._async = method

    def _returns(self) -> object:
        return inspect.Parameter.empty

    def _method(self) -> Callable[..., Any]:
        name = self._name

        async def method(self: Offloaded[Any], /, *args: Any, **kwargs: Any) -> Any:
            return await self._runner.run(getattr(self._sync, name), *args, **kwargs)

        return method

    @overload
    def __get__(self, instance: None, owner: type) -> Self: ...
    @overload
    def __get__(self, instance: Offloaded[S], owner: type) -> Callable[P, Awaitable[R]]: ...
    def __get__(self, instance: Offloaded[S] | None, owner: type) -> Any:
        if instance is None:
            return self._async
        return self._async.__get__(instance, owner)


def verb(fn: Callable[Concatenate[S, P], R]) -> _Member[S, P, R]:
    """The async twin of the sync method ``fn``."""
    return _Member(fn)


class _Opening(_Member[S, P, W]):
    """A sync method that returns a service object: awaited, it returns that object's
    async view, on the same runner (a namespace of a store, a transaction's twin)."""

    def __init__(
        self,
        fn: Callable[Concatenate[S, P], Any],
        wrap: Callable[[Any, Runner], W],
        returns: str | None = None,
    ):
        super().__init__(fn)
        self._wrap = wrap
        self._returns_name = returns or getattr(wrap, "__name__", None)

    def _returns(self) -> object:
        return self._returns_name or inspect.Parameter.empty

    def _method(self) -> Callable[..., Any]:
        name, wrap = self._name, self._wrap

        async def method(self: Offloaded[Any], /, *args: Any, **kwargs: Any) -> Any:
            return wrap(
                await self._runner.run(getattr(self._sync, name), *args, **kwargs), self._runner
            )

        return method


def opening(
    fn: Callable[Concatenate[S, P], R], wrap: Callable[[R, Runner], W], returns: str | None = None
) -> _Member[S, P, W]:
    """The async twin of ``fn``, whose result it wraps with ``wrap`` (an async class;
    ``returns`` names it when ``wrap`` is a lambda, for a class that returns itself)."""
    return _Opening(fn, wrap, returns)


class _Closing(_Member[S, P, R]):
    """``close``: runs the sync close, then stops the runner's threads. Closing twice is
    harmless, as it is for the sync store."""

    def _method(self) -> Callable[..., Any]:
        name = self._name

        async def method(self: Offloaded[Any], /, *args: Any, **kwargs: Any) -> Any:
            if self._runner.closed:
                return None
            try:
                return await self._runner.run(getattr(self._sync, name), *args, **kwargs)
            finally:
                self._runner.close()

        return method


def closing(fn: Callable[Concatenate[S, P], R]) -> _Member[S, P, R]:
    """The async twin of a ``close`` method."""
    return _Closing(fn)


class _Context(_Member[S, P, W]):
    """A sync context manager (``ns.transaction()``, ``ns.reading()``) as an async one.

    The context is entered on a thread of its own; the verbs of the value it yields run
    on that thread, in order; leaving it commits, or rolls back when the block raised
    or was cancelled."""

    def __init__(self, fn: Callable[Concatenate[S, P], Any], wrap: Callable[[Any, Runner], W]):
        super().__init__(fn)
        self._wrap = wrap

    def _returns(self) -> object:
        return f"AsyncContext[{getattr(self._wrap, '__name__', 'Any')}]"

    def _method(self) -> Callable[..., Any]:
        name, wrap = self._name, self._wrap

        def method(self: Offloaded[Any], /, *args: Any, **kwargs: Any) -> AsyncContext[Any]:
            if self._runner.closed:
                raise StoreClosedError(self._runner.closed_message)
            bound = getattr(self._sync, name)
            return AsyncContext(lambda: bound(*args, **kwargs), wrap)

        return method

    @overload  # type: ignore[override]
    def __get__(self, instance: None, owner: type) -> Self: ...
    @overload
    def __get__(self, instance: Offloaded[S], owner: type) -> Callable[P, AsyncContext[W]]: ...
    def __get__(self, instance: Offloaded[S] | None, owner: type) -> Any:
        return super().__get__(instance, owner)


def context(
    fn: Callable[Concatenate[S, P], AbstractContextManager[T]], wrap: Callable[[T, Runner], W]
) -> _Context[S, P, W]:
    """The async twin of a sync context manager method whose value ``wrap`` makes async."""
    return _Context(fn, wrap)


class AsyncContext(Generic[W]):
    """``async with``: a sync context entered and left on one dedicated thread."""

    def __init__(
        self, enter: Callable[[], AbstractContextManager[Any]], wrap: Callable[[Any, Runner], W]
    ):
        self._enter = enter
        self._wrap = wrap
        self._session: Session | None = None

    async def __aenter__(self) -> W:
        if self._session is not None:
            raise RuntimeError("an async memstore context is entered once")
        self._session = Session(self._enter)
        return self._wrap(await self._session.enter(), self._session)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        assert self._session is not None
        return await self._session.leave(failed=exc_type is not None)


class _Attribute(Generic[S, T]):
    """A sync property or attribute, read as it is (in-memory values: an id, a name)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, instance: None, owner: type) -> Self: ...
    @overload
    def __get__(self, instance: Offloaded[S], owner: type) -> T: ...
    def __get__(self, instance: Offloaded[S] | None, owner: type) -> Any:
        if instance is None:
            return self
        return getattr(instance._sync, self._name)


def same(kind: type[T]) -> _Attribute[Any, T]:
    """A sync attribute of type ``kind`` (a plain value), read unchanged."""
    return _Attribute()


class _Part(_Attribute[S, W]):
    """A sync attribute holding a service object (``ns.timeline``): its async view."""

    def __init__(self, wrap: Callable[[Any, Runner], W]):
        self._wrap = wrap

    def __get__(self, instance: Offloaded[S] | None, owner: type) -> Any:
        if instance is None:
            return self
        part = self._wrap(getattr(instance._sync, self._name), instance._runner)
        instance.__dict__[self._name] = part  # a non-data descriptor: read once
        return part


def part(prop: Callable[[S], T], wrap: Callable[[T, Runner], W]) -> _Attribute[S, W]:
    """The async view of the sync property ``prop`` (a tier of a namespace)."""
    return _Part(wrap)


class _Constructor(Generic[P, S]):
    """``open``: the sync class method run on a thread; returns the async class around it."""

    def __init__(self, fn: Callable[P, S], workers: Callable[[S], int]):
        self._fn = fn
        self._workers = workers

    def __set_name__(self, owner: type, name: str) -> None:
        fn, workers = self._fn, self._workers

        async def method(cls: Any, /, *args: Any, **kwargs: Any) -> Any:
            loop = asyncio.get_running_loop()
            opening = loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))
            try:
                opened = await asyncio.shield(opening)
            except asyncio.CancelledError:
                opening.add_done_callback(_close_when_opened)  # nobody will own it
                raise
            return cls(opened, Runner(workers(opened)))

        functools.update_wrapper(method, fn, assigned=("__doc__", "__module__"))
        method.__name__ = name
        method.__qualname__ = f"{owner.__qualname__}.{name}"
        # Bound to the class, the method drops its first parameter: give it one.
        signature = _signature_of(fn, owner.__name__)
        cls_parameter = inspect.Parameter("cls", inspect.Parameter.POSITIONAL_ONLY)
        method.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[cls_parameter, *signature.parameters.values()]
        )
        self._async = method

    def __get__(self, instance: object, owner: type[W]) -> Callable[P, Awaitable[W]]:
        return self._async.__get__(owner, owner)  # type: ignore[no-any-return]


def _close_when_opened(opening: asyncio.Future[Any]) -> None:
    """Close, on a thread, what an open whose caller was cancelled has opened."""
    if not opening.cancelled() and opening.exception() is None:
        asyncio.get_running_loop().run_in_executor(None, opening.result().close)


def constructor(fn: Callable[P, S], workers: Callable[[S], int]) -> _Constructor[P, S]:
    """The async twin of a class method that opens the sync object; its runner gets
    ``workers(opened)`` threads."""
    return _Constructor(fn, workers)


def pool_workers(store: Any) -> int:
    """The threads of an async store: as many as its engine's pool keeps connections.

    A verb runs in one connection's transaction (rarely two), so more threads would
    mostly queue in the pool or open and close overflow connections: 64 coroutines
    share these.
    """
    size = getattr(store.engine.pool, "size", None)
    return max(1, int(size())) if callable(size) else 1


class Closable:
    """``async with`` for a class whose twin has ``close`` (a generated member)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await getattr(self, "close")()  # noqa: B009 (close is the subclass's descriptor)
