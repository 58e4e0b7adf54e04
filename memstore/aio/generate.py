"""Write :mod:`memstore.aio._surface`, the async classes, from the public sync classes.

    python -m memstore.aio.generate          # rewrite memstore/aio/_surface.py
    python -m memstore.aio.generate --check  # exit 1 if it is out of date

Starting at :class:`~memstore.store.MemoryStore`, every service class a public member
returns (a namespace, its tiers, a transaction) gets an async twin, and every public
member of those classes one entry, by these rules:

- a method: a coroutine with the same parameters (``verb``); one returning a service
  object returns its async twin (``opening``); ``close`` also stops the threads;
- a context manager method (``ns.transaction()``, ``ns.reading()``): an async context
  manager whose value's verbs run on one thread of its own (``context``);
- a property holding a service object (``ns.timeline``): its async twin (``part``);
  one holding a plain value (``ns.id``): the value (``same``);
- a static method (pure, no database): itself; the class method ``open``: the async
  store's constructor, with as many threads as the engine's pool.

Members that hand out the raw SQLAlchemy connection or engine (``ns.connection()``,
``store.transaction()``, ``store.engine``) stay sync-only: awaited from a loop they
would block it; ``.sync`` reaches them for code that runs on a thread of its own.

The generated module names only members and classes, never a signature: the types come
from the sync methods themselves (a ``ParamSpec``), so the two surfaces cannot drift
apart in their parameters, and a test fails when a sync verb is added without
regenerating (tests/unit/test_async_surface.py).
"""

from __future__ import annotations

import enum
import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel

# Where service classes live (docs/design: services layer); anything else a member
# returns is data (a model, a number) and is returned unchanged.
SERVICE_PACKAGES = (
    "memstore.store",
    "memstore.namespace",
    "memstore.tx",
    "memstore.tiers",
    "memstore.lifecycle",
)
ROOT = ("memstore.store", "MemoryStore")
PLAIN = ("int", "str", "float", "bool")
# Raw SQLAlchemy objects: a loop must not use them (each call would block it).
SYNC_ONLY = re.compile(r"\b(Connection|Engine)\b")
# Public attributes set in __init__, which a class does not declare (name: type).
INSTANCE_ATTRIBUTES = {"Namespace": {"name": "str"}}
LINE_LENGTH = 100
TARGET = Path(__file__).with_name("_surface.py")


@dataclass(frozen=True)
class Entry:
    name: str
    line: str  # what the async class assigns to the name (empty when sync-only)
    excluded: str | None = None  # why the member stays sync-only
    # mypy cannot match ``self`` of a method that also takes **kwargs to a ParamSpec's
    # Concatenate (the caller could pass self=): the types are still the method's.
    ignore: bool = False


def service_classes() -> dict[str, type]:
    """Every class of the service modules, by name."""
    found: dict[str, type] = {}
    for package in SERVICE_PACKAGES:
        module = importlib.import_module(package)
        modules = [module]
        if hasattr(module, "__path__"):
            modules += [
                importlib.import_module(info.name)
                for info in pkgutil.walk_packages(module.__path__, f"{package}.")
            ]
        for mod in modules:
            for value in vars(mod).values():
                if (
                    inspect.isclass(value)
                    and value.__module__ == mod.__name__
                    and not issubclass(value, BaseModel | BaseException | tuple | enum.Enum)
                ):
                    found[value.__name__] = value
    return found


def async_name(cls: type) -> str:
    return f"Async{cls.__name__}"


class Surface:
    """The classes to generate and their entries, found from the root."""

    def __init__(self) -> None:
        self.services = service_classes()
        self.order: list[type] = []  # dependencies first
        self.entries: dict[type, list[Entry]] = {}
        self._visit(self.services[ROOT[1]])

    def _service(self, annotation: object) -> type | None:
        if not isinstance(annotation, str):
            annotation = getattr(annotation, "__name__", "")
        assert isinstance(annotation, str)
        text = annotation.strip().strip("'\"")
        inner = re.fullmatch(r"(?:Iterator|Generator|AbstractContextManager)\[(\w+).*\]", text)
        return self.services.get(inner.group(1) if inner else text)

    def _visit(self, cls: type) -> None:
        if cls in self.entries:
            return
        self.entries[cls] = []  # marks the visit (classes may refer to each other)
        entries = [self._entry(cls, name) for name in self._public_names(cls)]
        extra = INSTANCE_ATTRIBUTES.get(cls.__name__, {})
        known = {entry.name for entry in entries}
        entries += [
            Entry(name, f"same({kind})") for name, kind in extra.items() if name not in known
        ]
        self.entries[cls] = sorted(entries, key=lambda entry: entry.name)
        self.order.append(cls)

    @staticmethod
    def _public_names(cls: type) -> list[str]:
        names: set[str] = set()
        for klass in cls.__mro__[:-1]:
            names.update(vars(klass))
            names.update(getattr(klass, "__annotations__", {}))
        return sorted(name for name in names if not name.startswith("_"))

    def _wrap(self, target: type) -> str:
        self._visit(target)
        if target in self.order:
            return async_name(target)
        # Not generated yet (a class that returns itself): looked up when called.
        name = async_name(target)
        return f'lambda *made: {name}(*made), returns="{name}"'

    def _entry(self, cls: type, name: str) -> Entry:
        member = inspect.getattr_static(cls, name, None)
        ref = f"{cls.__name__}.{name}"
        if member is None:  # declared only: `id: int` on the class
            kind = _declared(cls, name)
            if kind in PLAIN:
                return Entry(name, f"same({kind})")
            return Entry(name, "", excluded=f"an attribute of type {kind}")
        if isinstance(member, staticmethod):
            return Entry(name, f"staticmethod({ref})")
        if isinstance(member, classmethod):
            return Entry(name, f"constructor({ref}, pool_workers)")
        if isinstance(member, property | cached_property):
            getter = member.fget if isinstance(member, property) else member.func
            returns = getter.__annotations__.get("return") if getter else None
            if returns in PLAIN:
                return Entry(name, f"same({returns})")
            target = self._service(returns)
            if target is not None:
                return Entry(name, f"part({ref}, {self._wrap(target)})")
            return Entry(name, "", excluded=f"a property of type {returns} (use .sync)")
        if not callable(member):
            return Entry(name, "", excluded="not a method")
        annotations = {key: str(value) for key, value in member.__annotations__.items()}
        returns = annotations.pop("return", "")
        if any(SYNC_ONLY.search(text) for text in annotations.values()):
            return Entry(name, "", excluded="takes a SQLAlchemy connection")
        target = self._service(returns)
        ignore = _takes_any_keyword(member)
        if hasattr(member, "__wrapped__") and inspect.isgeneratorfunction(inspect.unwrap(member)):
            if target is None:
                return Entry(name, "", excluded=f"a context manager of {returns} (use .sync)")
            return Entry(name, f"context({ref}, {self._wrap(target)})", ignore=ignore)
        if target is not None:
            return Entry(name, f"opening({ref}, {self._wrap(target)})", ignore=ignore)
        if SYNC_ONLY.search(returns):
            return Entry(name, "", excluded=f"returns {returns} (use .sync)")
        if name == "close":
            return Entry(name, f"closing({ref})")
        return Entry(name, f"verb({ref})", ignore=ignore)

    def render(self) -> str:
        lines = [
            '"""The async classes: generated by ``python -m memstore.aio.generate``; do not edit.',
            "",
            "Each entry names a member of the sync class; its parameters, return type and",
            "docs are the sync member's own (memstore/aio/_offload.py, docs/async.md).",
            '"""',
            "",
            "from memstore.aio._offload import (",
            "    Closable,",
            "    Offloaded,",
            "    closing,",
            "    constructor,",
            "    context,",
            "    opening,",
            "    part,",
            "    pool_workers,",
            "    same,",
            "    verb,",
            ")",
        ]
        for cls in sorted(self.order, key=lambda c: (c.__module__, c.__name__)):
            lines.append(f"from {cls.__module__} import {cls.__name__}")
        for cls in self.order:
            entries = self.entries[cls]
            closable = any(e.line.startswith("closing(") for e in entries)
            bases = f"Offloaded[{cls.__name__}]" + (", Closable" if closable else "")
            lines += ["", "", f"class {async_name(cls)}({bases}):"]
            lines.append(f'    """The async twin of :class:`{cls.__module__}.{cls.__name__}`."""')
            lines.append("")
            for entry in entries:
                if entry.excluded is None:
                    lines += _assignment(entry)
            for entry in entries:
                if entry.excluded is not None:
                    lines.append(f"    # sync-only: {entry.name}, {entry.excluded}")
        lines.append("")  # memstore.aio exports the classes
        return "\n".join(lines)


def _assignment(entry: Entry) -> list[str]:
    """``name = call(args)`` on one line, or one argument a line when it is too long."""
    line = f"    {entry.name} = {entry.line}"
    if entry.ignore:
        return [f"{line}  # type: ignore[arg-type]"]
    if len(line) <= LINE_LENGTH:
        return [line]
    call, _, args = entry.line.partition("(")
    arguments = args.removesuffix(")").split(", ")
    return [
        f"    {entry.name} = {call}(",
        *(f"        {argument}," for argument in arguments),
        "    )",
    ]


def _takes_any_keyword(fn: Callable[..., Any]) -> bool:
    parameters = inspect.signature(fn).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _declared(cls: type, name: str) -> object:
    for klass in cls.__mro__:
        declared = vars(klass).get("__annotations__", {})
        if name in declared:
            return declared[name]
    return None


def generated() -> str:
    """The text of memstore/aio/_surface.py for the sync classes as they are now."""
    return Surface().render()


def main(argv: list[str]) -> int:
    text = generated()
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET} is out of date: run python -m memstore.aio.generate")
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
