"""Export one namespace as a JSON-lines file, and restore such a file into an empty one.

The file (docs/operations.md, "Export and restore") is a header line, one
line per row of each section in the order of
:data:`memstore.graph.export.SECTIONS`, and an ``end`` line with the count of
each section, so a file cut short is refused rather than half restored.

Export reads the namespace in one REPEATABLE READ snapshot and streams each
section with COPY: memory stays flat whatever the namespace's size. Restore
reads the file line by line, checks each line, stages each section by COPY
and moves it into the tables under new ids (:mod:`memstore.graph.export`),
all in one transaction; ids inside the audit log's and the review queue's
JSON documents are rewritten through the same map here.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import psycopg
from sqlalchemy.engine import Connection, Engine

from memstore.config import Settings
from memstore.db import migrate
from memstore.db.transaction import declare_scope, transaction
from memstore.embedding import cache
from memstore.embedding.base import Embedder
from memstore.errors import (
    InvalidInputError,
    NamespaceNotEmptyError,
    RestoreNotPermittedError,
    SnapshotFileError,
)
from memstore.graph import export as rows
from memstore.graph.namespaces import open_namespace
from memstore.graph.nodes import analyze_nodes
from memstore.models import PRIVACY_MAX, ExportSummary, RestoreSummary
from memstore.services.scope import Scope, check_namespace_name

FORMAT = "memstore-export"
FORMAT_VERSION = 1

# A line longer than this is not a row memstore wrote (content, data and the
# JSON documents are bounded far below it): refused before it is parsed.
MAX_LINE_BYTES = 64 * 1024 * 1024

# Rows of the review queue and the audit log are rewritten in the client, a
# chunk at a time; memory stays bounded by the chunk.
CHUNK = 500
EMBED_BATCH = 1000

Target = str | os.PathLike[str] | IO[bytes]


# --- export --------------------------------------------------------------------------------


def export(
    scope: Scope,
    target: Target,
    *,
    with_vectors: bool = False,
    privacy_ceiling: int | None = None,
) -> ExportSummary:
    """See :meth:`memstore.namespace.Namespace.export`."""
    ceiling = scope.ceiling(privacy_ceiling)
    if ceiling < PRIVACY_MAX:
        raise InvalidInputError(
            f"an export is a whole namespace: it needs privacy_ceiling {PRIVACY_MAX}"
            f" (every level), not {ceiling}; a partial copy would restore a different"
            " namespace (edges, lineage and the audit log name the memories left out)",
            field="privacy_ceiling",
        )
    if not isinstance(with_vectors, bool):
        raise InvalidInputError("with_vectors must be true or false", field="with_vectors")
    if not scope.exists():
        raise InvalidInputError(
            f"namespace {scope.name!r} does not exist: nothing to export", field="namespace"
        )
    with _writable(target) as out:
        return _export(scope, out, with_vectors=with_vectors, ceiling=ceiling)


def _export(scope: Scope, out: IO[bytes], *, with_vectors: bool, ceiling: int) -> ExportSummary:
    model = scope.embedder.name
    counts: dict[str, int] = {}
    written = 0
    with rows.snapshot_transaction(scope.engine, scope.id, privacy_ceiling=ceiling) as conn:
        exported_at = rows.server_time(conn)
        header = {
            "t": "header",
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "memstore": _memstore_version(),
            "schema": migrate.head_revision(),
            "namespace": scope.name,
            "embedder": {"name": model, "dims": scope.embedder.dims},
            "vectors": with_vectors,
            "exported_at": exported_at.isoformat(),
        }
        written += _write_line(out, header)
        for section in rows.SECTIONS:
            counts[section] = 0
            if section == "embedding" and not with_vectors:
                continue
            for block in rows.export_rows(conn, section, scope.id, model):
                out.write(block)
                written += len(block)
                counts[section] += block.count(b"\n")
    written += _write_line(out, {"t": "end", "rows": counts})
    return ExportSummary(
        namespace=scope.name,
        exported_at=exported_at,
        rows=counts,
        vectors=with_vectors,
        bytes=written,
    )


def _write_line(out: IO[bytes], document: dict[str, Any]) -> int:
    line = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    out.write(line)
    return len(line)


@contextmanager
def _writable(target: Target) -> Iterator[IO[bytes]]:
    """A binary stream to write to: the caller's, or a file written beside ``target`` and
    renamed onto it once complete, so a failed export never leaves half a file."""
    if not isinstance(target, str | os.PathLike):
        if not hasattr(target, "write"):
            raise InvalidInputError(
                "export writes to a path or a binary stream", field="destination"
            )
        yield target
        return
    path = Path(target)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        with open(partial, "wb") as out:
            yield out
        os.replace(partial, path)
    except OSError as exc:
        raise InvalidInputError(
            f"cannot write {str(path)!r}: {exc.strerror or exc}", field="destination"
        ) from None
    finally:
        partial.unlink(missing_ok=True)


def _memstore_version() -> str:
    from importlib.metadata import version

    return version("memstore")


# --- restore -------------------------------------------------------------------------------


def restore(
    engine: Engine,
    source: Target,
    *,
    namespace: str,
    settings: Settings,
    embedder: Embedder,
    progress: Callable[[str, int], None] | None = None,
) -> RestoreSummary:
    """See :meth:`memstore.store.MemoryStore.restore`."""
    name = check_namespace_name(namespace)
    with _readable(source) as stream:
        lines = _lines(stream)
        header = _header(lines)
        model = embedder.name
        embedder_of_file = header.get("embedder") or {}
        use_vectors = bool(header.get("vectors")) and (
            embedder_of_file.get("name") == model and embedder_of_file.get("dims") == embedder.dims
        )
        with transaction(engine) as conn:
            namespace_id = open_namespace(conn, name, embedder)
            declare_scope(conn, namespace_id, PRIVACY_MAX)
            if not rows.begin_restore(conn, namespace_id):
                raise RestoreNotPermittedError(
                    "restore keeps the file's transaction times, which only the tables' owner"
                    " (the migrating role, logged in as itself) may write: run it as the"
                    " owner, not as the service role (docs/security.md)"
                )
            if rows.holds_rows(conn, namespace_id):
                raise NamespaceNotEmptyError(
                    f"namespace {name!r} is not empty: restore rebuilds only into an empty"
                    " or new namespace; pick another name",
                    namespace=name,
                )
            loader = _Loader(conn, namespace_id, model, use_vectors=use_vectors)
            counts = loader.load(lines, progress)
            # Fresh statistics for the rows just written: with the new namespace
            # unknown to the planner, the search for memories without a vector
            # probed the vector table by sequential scan, once per memory.
            analyze_nodes(conn)
            embedded = _embed_missing(conn, namespace_id, embedder)
            if progress is not None:
                progress("vectors", embedded)
            rows.record_restore(
                conn,
                namespace_id,
                {
                    "batch_id": f"restore-{uuid.uuid4().hex}",
                    "op": "restore",
                    "phase": None,
                    "actor": settings.actor,
                    "outcome": "accepted",
                    "reason": f"restored from an export of namespace {header['namespace']!r}",
                    "payload": {
                        "format": FORMAT,
                        "version": FORMAT_VERSION,
                        "source_namespace": header["namespace"],
                        "exported_at": header["exported_at"],
                        "memstore": header.get("memstore"),
                        "schema": header.get("schema"),
                        "sha256": lines.digest(),
                    },
                    "receipt": {"rows": counts, "vectors_embedded": embedded},
                },
            )
    cache.ensure_index(engine, model, embedder.dims)
    return RestoreSummary(
        namespace=name,
        source_namespace=header["namespace"],
        exported_at=datetime.fromisoformat(header["exported_at"]),
        rows={section: counts[section] for section in rows.SECTIONS if section != "embedding"},
        vectors_restored=counts["embedding"],
        vectors_embedded=embedded,
    )


@contextmanager
def _readable(source: Target) -> Iterator[IO[bytes]]:
    if not isinstance(source, str | os.PathLike):
        if not hasattr(source, "read"):
            raise InvalidInputError("restore reads a path or a binary stream", field="file")
        yield source
        return
    path = Path(source)
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise SnapshotFileError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    with stream:
        yield stream


class _Lines:
    """The file's lines, numbered from 1, each parsed as a JSON object; the sha256 of
    what was read so far."""

    def __init__(self, stream: IO[bytes]):
        self._stream = stream
        self._hash = hashlib.sha256()
        self.number = 0

    def __iter__(self) -> Iterator[tuple[int, str, dict[str, Any]]]:
        return self

    def __next__(self) -> tuple[int, str, dict[str, Any]]:
        raw = self._stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            raise StopIteration
        self.number += 1
        self._hash.update(raw)
        if len(raw) > MAX_LINE_BYTES:
            raise SnapshotFileError(
                f"line {self.number} is longer than {MAX_LINE_BYTES} bytes", line=self.number
            )
        try:
            text = raw.decode()
            document = json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            raise SnapshotFileError(
                f"line {self.number} is not JSON: {exc}", line=self.number
            ) from None
        if not isinstance(document, dict) or not isinstance(document.get("t"), str):
            raise SnapshotFileError(
                f'line {self.number} is not an export row (a JSON object with "t")',
                line=self.number,
            )
        return self.number, text.rstrip("\n"), document

    def digest(self) -> str:
        return self._hash.hexdigest()


def _lines(stream: IO[bytes]) -> _Lines:
    return _Lines(stream)


def _header(lines: _Lines) -> dict[str, Any]:
    try:
        _, _, header = next(lines)
    except StopIteration:
        raise SnapshotFileError("the file is empty: not a memstore export", line=1) from None
    if header.get("t") != "header" or header.get("format") != FORMAT:
        raise SnapshotFileError("the first line is not a memstore export header", line=1)
    if header.get("version") != FORMAT_VERSION:
        raise SnapshotFileError(
            f"the file is export format version {header.get('version')!r}; this memstore"
            f" reads version {FORMAT_VERSION}",
            line=1,
        )
    if not isinstance(header.get("namespace"), str) or not isinstance(
        header.get("exported_at"), str
    ):
        raise SnapshotFileError("the header lacks the namespace or its time", line=1)
    try:
        datetime.fromisoformat(header["exported_at"])
    except ValueError:
        raise SnapshotFileError("the header's exported_at is not a time", line=1) from None
    return header


# Keys of the audit log's and the review queue's JSON documents that hold ids, and
# what they name (memstore.law.ops and memstore.law.receipt); target_id names a node or,
# beside "target": "edge", an edge. Ids under other keys (and ids in text, such as
# evidence anchors) are kept as they were.
_ID_KEYS = {
    **dict.fromkeys(
        (
            "node_id",
            "ids",
            "sources",
            "incubation_id",
            "src",
            "dst",
            "nodes",
            "accounted",
            "residue",
        ),
        "node",
    ),
    "edge_id": "edge",
    "edges": "edge",
    "tombstones": "tombstone",
    "proposal_id": "proposal",
    "operation_id": "operation",
}
_DOCUMENTS = {"proposal": ("operation",), "operation": ("payload", "receipt")}

Visit = Callable[[str, int], int]


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _walk(value: Any, visit: Visit) -> Any:
    """``value`` with every id under an id key replaced by ``visit(kind, id)``."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            kind = _ID_KEYS.get(key)
            if key == "target_id":
                kind = "edge" if value.get("target") == "edge" else "node"
            if kind is None:
                out[key] = _walk(item, visit)
            elif _is_id(item):
                out[key] = visit(kind, item)
            elif isinstance(item, list):
                out[key] = [visit(kind, v) if _is_id(v) else _walk(v, visit) for v in item]
            else:
                out[key] = _walk(item, visit)
        return out
    if isinstance(value, list):
        return [_walk(item, visit) for item in value]
    return value


class _Loader:
    """Stages the file's sections one after the other and moves each into its table."""

    def __init__(self, conn: Connection, namespace_id: int, model: str, *, use_vectors: bool):
        self.conn = conn
        self.namespace_id = namespace_id
        self.model = model
        self.use_vectors = use_vectors
        self.counts = dict.fromkeys(rows.SECTIONS, 0)
        self.seen = dict.fromkeys(rows.SECTIONS, 0)
        self._section: str | None = None
        self._copy = ExitStack()
        self._staging: psycopg.Copy | None = None
        self._chunk: list[tuple[int, dict[str, Any]]] = []

    def load(
        self,
        lines: _Lines,
        progress: Callable[[str, int], None] | None,
    ) -> dict[str, int]:
        try:
            return self._load(lines, progress)
        except BaseException as exc:
            # An open COPY must end (with CopyFail) before the transaction can roll back.
            self._copy.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def _load(
        self,
        lines: _Lines,
        progress: Callable[[str, int], None] | None,
    ) -> dict[str, int]:
        end: dict[str, Any] | None = None
        for number, text, document in lines:
            kind = document["t"]
            if end is not None:
                raise SnapshotFileError(f"line {number} follows the end line", line=number)
            if kind == "end":
                self._finish(progress)
                end = document
                self._check_end(number, document)
                continue
            if kind not in self.counts:
                raise SnapshotFileError(
                    f"line {number} is of an unknown kind {kind!r}", line=number
                )
            if kind != self._section:
                self._enter(number, kind, progress)
            self.seen[kind] += 1
            self._add(number, text, document)
        if end is None:
            raise SnapshotFileError(
                f"the file ends at line {lines.number} without its end line: it was cut"
                " short; nothing was restored",
                line=lines.number,
            )
        return self.counts

    def _enter(self, number: int, kind: str, progress: Callable[[str, int], None] | None) -> None:
        order = rows.SECTIONS
        if self._section is not None and order.index(kind) < order.index(self._section):
            raise SnapshotFileError(
                f"line {number}: a {kind} row after {self._section} rows; an export holds"
                f" its sections in the order {', '.join(order)}",
                line=number,
            )
        if self.seen[kind]:
            raise SnapshotFileError(f"line {number}: {kind} rows come in one run", line=number)
        self._finish(progress)
        self._section = kind
        rows.clear_staging(self.conn)

    def _add(self, number: int, text: str, document: dict[str, Any]) -> None:
        kind = self._section
        assert kind is not None
        if kind == "embedding" and not self.use_vectors:
            return
        if kind in _DOCUMENTS:
            self._chunk.append((number, document))
            if len(self._chunk) >= CHUNK:
                self._flush_chunk()
            return
        if self._staging is None:
            self._staging = self._copy.enter_context(rows.staging(self.conn))
        self._staging.write_row((number, text))

    def _flush_chunk(self) -> None:
        """Give the chunk's rows their new ids, rewrite the ids their documents name, and
        stage them."""
        kind = self._section
        assert kind is not None
        chunk, self._chunk = self._chunk, []
        if not chunk:
            return
        old_ids = []
        for number, document in chunk:
            if not _is_id(document.get("id")):
                raise SnapshotFileError(f"line {number}: a {kind} row needs an id", line=number)
            old_ids.append(document["id"])
        rows.reserve_ids(self.conn, kind, old_ids)
        named: set[tuple[str, int]] = set()

        def collect(what: str, old: int) -> int:
            named.add((what, old))
            return old

        for _, document in chunk:
            for key in _DOCUMENTS[kind]:
                _walk(document.get(key), collect)
        new_ids = rows.lookup_ids(self.conn, sorted(named))
        with rows.staging(self.conn) as copy:
            for number, document in chunk:
                for key in _DOCUMENTS[kind]:
                    if key in document:
                        document[key] = _walk(
                            document[key], lambda what, old: new_ids.get((what, old), old)
                        )
                copy.write_row((number, json.dumps(document, ensure_ascii=False)))

    def _finish(self, progress: Callable[[str, int], None] | None) -> None:
        """Move the current section's staged rows into their table."""
        kind = self._section
        if kind is None:
            return
        self._flush_chunk()
        self._copy.close()
        self._staging = None
        if kind in rows.ID_TABLES and kind not in _DOCUMENTS:
            rows.map_staged_ids(self.conn, kind)
        if kind != "embedding" or self.use_vectors:
            self.counts[kind] = rows.insert_staged(self.conn, kind, self.namespace_id, self.model)
        self._section = None
        if progress is not None:
            progress(kind, self.counts[kind])

    def _check_end(self, number: int, end: dict[str, Any]) -> None:
        declared = end.get("rows")
        if not isinstance(declared, dict):
            raise SnapshotFileError(f"line {number}: the end line lacks its counts", line=number)
        for section in rows.SECTIONS:
            if declared.get(section, 0) != self.seen[section]:
                raise SnapshotFileError(
                    f"the file holds {self.seen[section]} {section} rows where its end line"
                    f" says {declared.get(section, 0)}: it is incomplete or was edited",
                    line=number,
                )


def _embed_missing(conn: Connection, namespace_id: int, embedder: Embedder) -> int:
    """Vectors for the restored memories that have none for the store's embedder (the file
    carried none, or another model's), computed in the restore's transaction."""
    written = 0
    after = 0
    while batch := rows.unembedded(
        conn, namespace_id, embedder.name, after=after, limit=EMBED_BATCH
    ):
        ids = [node_id for node_id, _ in batch]
        texts = [content for _, content in batch]
        rows.write_vectors(conn, namespace_id, embedder.name, ids, texts, embedder.embed(texts))
        written += len(batch)
        after = ids[-1]
    return written
