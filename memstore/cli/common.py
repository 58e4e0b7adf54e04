"""Shared pieces of the CLI: the app, global options, consoles, opening the store.

Light on purpose: every command module imports this one while ``memstore
--help`` is answered, so the settings (pydantic) and the store (SQLAlchemy,
psycopg, numpy) are imported only when a command runs (memstore/cli/__init__.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from memstore.errors import InvalidInputError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from memstore.config import Settings
    from memstore.store import MemoryStore

app = typer.Typer(
    help="memstore: a relational memory store for AI agents on PostgreSQL + pgvector.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# No markup and no emoji codes: printed strings carry stored memories and user
# input, and "[/INST]" or ":smile:" in a memory must print as written (an
# unmatched closing tag used to crash the command).
out = Console(soft_wrap=True, markup=False, emoji=False)
err = Console(stderr=True, soft_wrap=True, markup=False, emoji=False)

NamespaceOption = Annotated[
    str,
    typer.Option("--namespace", "-n", envvar="MEMSTORE_NAMESPACE", help="The namespace to act in."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
CeilingOption = Annotated[
    int | None,
    typer.Option(
        "--privacy-ceiling",
        envvar="MEMSTORE_PRIVACY_CEILING",
        min=0,
        max=3,
        help="Show nothing above this privacy level (0-3). Unset: every level (3).",
        show_default=False,
    ),
]


@dataclass
class _Options:
    overrides: dict[str, object] = field(default_factory=dict)
    settings: Settings | None = None


@app.callback()
def _options(
    ctx: typer.Context,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            envvar="MEMSTORE_DATABASE_URL",
            help="PostgreSQL >= 15 with pgvector >= 0.8. Unset: the embedded server.",
            show_default=False,
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            envvar="MEMSTORE_EMBEDDER",
            help="auto (neural when installed, else hashing), neural or hashing.",
            show_default=False,
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="MEMSTORE_DATA_DIR",
            help="Where the embedded server keeps its data (default ~/.local/share/memstore).",
            show_default=False,
        ),
    ] = None,
) -> None:
    overrides: dict[str, object] = {}
    if database_url:
        overrides["database_url"] = database_url
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if embedder:
        overrides["embedder"] = embedder
    ctx.obj = _Options(overrides=overrides)


def settings_of(ctx: typer.Context) -> Settings:
    """The settings the global options and the environment describe."""
    from memstore.config import Settings

    options: _Options = ctx.ensure_object(_Options)
    if options.settings is None:
        options.settings = Settings(**options.overrides)  # type: ignore[arg-type]
    return options.settings


@contextmanager
def open_store(ctx: typer.Context) -> Iterator[MemoryStore]:
    """The store the global options describe, closed afterwards."""
    from memstore.store import MemoryStore

    with MemoryStore.open(settings=settings_of(ctx)) as store:
        yield store


def print_json(model: BaseModel | Sequence[BaseModel]) -> None:
    """A model (or a list of them) as indented JSON on stdout."""
    from pydantic import BaseModel

    if not isinstance(model, BaseModel):
        print("[" + ",\n".join(m.model_dump_json(indent=2) for m in model) + "]")
    else:
        print(model.model_dump_json(indent=2))


def read_input(source: str, *, max_bytes: int | None = None, what: str = "file") -> str:
    """The UTF-8 text of file ``source`` (``-``: stdin), or an :class:`InvalidInputError`.

    Every command that reads a file reads it here, so each failure is one line
    on stderr and exit 1, never a traceback: a missing file, a directory, a
    file it may not read, one larger than ``max_bytes`` (refused before it is
    read), bytes that are not UTF-8, an empty (or blank) file. A UTF-8 byte
    order mark is skipped.
    """
    name = "stdin" if source == "-" else source
    if not source:
        raise InvalidInputError(f"no {what} given", field=what)
    try:
        if source == "-":
            data = sys.stdin.buffer.read(-1 if max_bytes is None else max_bytes + 1)
        else:
            path = Path(source)
            if path.is_dir():
                raise InvalidInputError(f"{name}: is a directory, not a {what}", field=what)
            if not path.exists():
                raise InvalidInputError(f"{name}: no such {what}", field=what)
            if max_bytes is not None and path.stat().st_size > max_bytes:
                raise InvalidInputError(
                    f"{name}: larger than {max_bytes} bytes, the most this command reads",
                    field=what,
                )
            data = path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(
            f"{name}: cannot be read ({exc.strerror or type(exc).__name__})", field=what
        ) from None
    if max_bytes is not None and len(data) > max_bytes:  # stdin, or a file that grew
        raise InvalidInputError(
            f"{name}: larger than {max_bytes} bytes, the most this command reads", field=what
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{name}: not UTF-8 text (undecodable byte at offset {exc.start})", field=what
        ) from None
    if not text.strip():
        raise InvalidInputError(f"{name}: is empty", field=what)
    return text


def parse_json(text: str, *, where: str, field: str | None = None) -> Any:
    """``text`` parsed as JSON, or one :class:`InvalidInputError` line naming ``where``.

    Python's parser recurses: pathologically nested input (100,000 ``[``) raises
    RecursionError, which is answered like any other malformed JSON.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{where} is not JSON ({exc.msg}, line {exc.lineno} column {exc.colno})", field=field
        ) from None
    except RecursionError:
        raise InvalidInputError(
            f"{where} is not JSON we accept: nested too deeply", field=field
        ) from None


TagOption = Annotated[
    list[str] | None,
    typer.Option("--tag", help="A tag (repeat for more); normalised to lower case."),
]
FilterTagOption = Annotated[
    list[str] | None,
    typer.Option("--tag", help="Only memories carrying this tag (repeat: every one of them)."),
]
