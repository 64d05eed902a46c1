"""Dense vectors of the PostgreSQL turn index: off the turn's path, binary on the wire,
kept in memory once read.

* **Writing.** ``add_turns`` commits a turn without its vector and hands the turn to this
  index's :class:`VectorWriter`, a background thread (as the SQLite index's
  :class:`~.vectors.DenseIndex` writer, on its own connection): once the index's writes
  pause (:data:`PAUSE`), it embeds a batch of turns and the words of theirs the user's
  vocabulary lacks (:mod:`.postgres_expand`) with no lock held and no transaction open,
  then stores the vectors and the words in one transaction. So a turn
  that has its vector has its words too, and a crash leaves turns without a vector,
  never a vector without its turn. The first write or search of a user in a process
  back-fills that user's turns left without a vector (a crash, an index opened without
  the model, another host that stopped first); :meth:`VectorWriter.flush` waits for it.
* **Wire.** Vectors go out as binary ``real[]`` (:func:`float4_array`, cast to ``vector``
  when pgvector holds them) and come back as binary float32 (``vector_send`` for
  pgvector's type, the ``bytea`` itself otherwise): no text formatting or parsing of 384
  numbers per turn.
* **Reading.** :class:`VectorCache` keeps each vector read or written by this process
  (turn ids are unique, a stored vector never changes), so the ``dense`` signal of a
  search is computed in memory and only turns this process has not seen are read.
"""

from __future__ import annotations

import threading
import time
from array import array
from collections.abc import Sequence
from struct import Struct
from typing import Any

import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format

from memoryport.errors import StoreError
from memoryport.storage.postgres_wire import BinaryArray
from memoryport.storage.turns import postgres_expand, query_encoder, vectors
from memoryport.storage.turns.postgres_link import PgLink
from memoryport.storage.turns.vector_cache import VECTOR_CACHE, VectorCache

__all__ = ["BACKFILL_CHUNK", "VECTOR_CACHE", "VectorCache", "VectorWriter", "float4_array",
           "read_vectors", "store_vectors"]

BACKFILL_CHUNK = 500
"""Turn ids the writer checks for a missing vector per read when back-filling a user."""
PAUSE = 0.05
"""Seconds without a new turn the writer waits for before it embeds (unless a flush
waits): the model and the turn's write would share the CPU and the interpreter, and a
turn's round trips each wait for the interpreter the model holds (LoCoMo ingest here, 300
turns back to back at load 6: 5-8 ms a turn alone, 16-20 ms while the writer embeds)."""
MAX_DEFER = 2.0
"""The longest the writer defers a batch for :data:`PAUSE` (a steady stream of turns
still gets a batch embedded every two seconds)."""

_HEAD = Struct(">iiiii").pack  # dimensions, has nulls, element oid, length, lower bound


class _Float4Array(BinaryArray):
    oid = 1021  # real[]


class _Float4ArrayDumper(Dumper):
    """Dumps a :class:`_Float4Array` unchanged (the bytes are the wire format)."""

    format = Format.BINARY
    oid = _Float4Array.oid

    def dump(self, obj: Any) -> Buffer | None:
        """The array's bytes."""
        return bytes(obj)


psycopg.adapters.register_dumper(_Float4Array, _Float4ArrayDumper)  # a private type only


def float4_array(vector: array[float]) -> BinaryArray:
    """``vector`` as a binary ``real[]`` (each element: its size, then big-endian float32)."""
    wire = array("f", vector)
    if wire.itemsize != 4:
        raise ValueError("float32 vectors expected")
    if _LITTLE:
        wire.byteswap()
    raw = wire.tobytes()
    body = b"".join(_FOUR + raw[n:n + 4] for n in range(0, len(raw), 4))
    return _Float4Array(_HEAD(1, 0, 700, len(vector), 1) + body)


_FOUR = Struct(">i").pack(4)
_LITTLE = array("H", [1]).tobytes()[0] == 1


def _from_wire(value: bytes, pgvector: bool) -> bytes:
    """A vector read in binary as float32 bytes in this machine's order (pgvector's
    ``vector_send``: a 4-byte header, then big-endian floats; a ``bytea``: as stored)."""
    if not pgvector:
        return value
    out = array("f")
    out.frombytes(value[4:])
    if _LITTLE:
        out.byteswap()
    return out.tobytes()


def read_vectors(index: Any, scope: str, turn_ids: Sequence[int]) -> dict[int, bytes]:
    """The stored vectors of ``turn_ids`` of ``scope`` (this index's model) in binary,
    kept in the cache (caller holds the index's lock)."""
    if not turn_ids:
        return {}
    pgvector = index._vector_type.startswith("vector")
    column = "vector_send(vec)" if pgvector else "vec"
    rows = index._read(lambda c: c.execute(index._q(
        f"SELECT turn_id, {column} FROM {{s}}.turn_vectors WHERE user_id = %s"
        " AND model = %s AND turn_id = ANY(%s)"),
        (scope, index.embedder.name, list(turn_ids)), binary=True).fetchall(), scope)
    found = {int(i): _from_wire(bytes(v), pgvector) for i, v in rows}
    index._vcache.put(found)
    return found


def store_vectors(index: Any, cur: Any, user: str, vecs: Sequence[tuple[int, str, bytes]]
                  ) -> None:
    """Insert ``(turn id, model, float32 bytes)`` rows of ``user`` in the caller's
    transaction; a turn that is gone (or has a vector of that model) is skipped."""
    if not vecs:
        return
    if index._vector_type.startswith("vector"):
        cur.executemany(index._q(
            "INSERT INTO {s}.turn_vectors(turn_id, user_id, model, vec)"
            " SELECT t.id, %s, %s, %s::vector FROM {s}.turns t WHERE t.id = %s"
            " ON CONFLICT (turn_id) DO NOTHING"),
            [(user, m, float4_array(vectors.decode(b)), i) for i, m, b in vecs])
    else:
        cur.executemany(index._q(
            "INSERT INTO {s}.turn_vectors(turn_id, user_id, model, vec)"
            " SELECT t.id, %s, %s, %s FROM {s}.turns t WHERE t.id = %s"
            " ON CONFLICT (turn_id) DO NOTHING"), [(user, m, b, i) for i, m, b in vecs])


class VectorWriter(vectors.WriterThread):
    """The background writer of one :class:`~.postgres.PostgresTurnIndex` (see the module
    docstring), on a connection of its own (opened with the thread, closed when it
    stops), so its commits never hold up the index's writes and searches."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self._link: PgLink | None = None
        self._cond = threading.Condition()
        self._queue: dict[str, dict[int, str]] = {}  # scope -> turn id -> text, to embed
        self._backfill: dict[str, int] = {}  # scope -> last turn id checked
        self._touched: set[str] = set()  # scopes back-filled (or being) by this process
        self._fits = query_encoder.FitSchedule()  # the query encoder's maps due
        self._busy = self._stopping = False
        self._flushing = 0  # flush() calls waiting: no deferring
        self._last_add = 0.0  # when the index last handed over turns (monotonic)
        self._thread: threading.Thread | None = None
        self.error = ""
        """The last error of the writer ("" when none)."""

    def added(self, scope: str, turns: dict[int, str]) -> None:
        """Embed ``turns`` (id -> text) of ``scope``, just committed."""
        with self._cond:
            self._queue.setdefault(scope, {}).update(turns)
            self._last_add = time.monotonic()
        self.touch(scope)

    def touch(self, scope: str) -> None:
        """Back-fill ``scope`` once per process (its turns left without a vector)."""
        with self._cond:
            if self._stopping:
                return
            if scope not in self._touched:
                self._touched.add(scope)
                self._backfill[scope] = 0
                if self.index._encoder is not None:
                    self._fits.want(scope)
            elif not self._queue.get(scope):
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="memoryport-pg-vectors")
                self._thread.start()
            self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every turn handed over (and every back-fill) is done; False when
        ``timeout`` seconds passed first or the writer is stopped."""
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                return self._cond.wait_for(
                    lambda: self._stopping or not (self._busy or self._work()), timeout
                ) and not self._stopping
            finally:
                self._flushing -= 1

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the current batch (what is left is back-filled later)."""
        thread = self._halt(timeout)
        if self._link is not None and (thread is None or not thread.is_alive()):
            self._link.close()

    def _work(self) -> bool:
        encoder = self.index._encoder
        return (any(self._queue.values()) or bool(self._backfill) or (
            encoder is not None and self._fits.next(encoder, uncounted=True) is not None))

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or self._work())
                self._defer()
                if self._stopping:
                    self._busy = False
                    self._cond.notify_all()
                    return
                self._busy = True
                scope, batch, step = self._take()
            try:
                if step == "fit":
                    self._fit(scope)
                elif step == "backfill":
                    batch = self._missing(scope)
                if batch:
                    self._write(scope, batch)
            except (psycopg.Error, StoreError, ValueError, RuntimeError, OSError) as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                with self._cond:  # left without vectors: back-filled at the next touch
                    self._backfill.pop(scope, None)
                    self._touched.discard(scope)
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _defer(self) -> None:
        """Wait (holding the condition) for :data:`PAUSE` seconds without a new turn, at
        most :data:`MAX_DEFER`; not while a flush waits or the writer stops."""
        start = time.monotonic()
        while not self._stopping and not self._flushing:
            now = time.monotonic()
            quiet = self._last_add + PAUSE - now
            if quiet <= 0 or now - start >= MAX_DEFER:
                return
            self._cond.wait(min(quiet, start + MAX_DEFER - now))

    def _take(self) -> tuple[str, dict[int, str], str]:
        """The next step (caller holds the condition): queued turns first, in id order
        (``"write"``), else a back-fill step (``"backfill"``), else a query-encoder fit
        (``"fit"``)."""
        for scope, pending in self._queue.items():
            if pending:
                ids = sorted(pending)[:vectors.WRITE_BATCH]
                return scope, {i: pending.pop(i) for i in ids}, "write"
        if self._backfill:
            return next(iter(self._backfill)), {}, "backfill"
        due = self._fits.next(self.index._encoder, uncounted=True)  # (_work said so)
        return str(due), {}, "fit"

    def _fit(self, scope: str) -> None:
        """Fit the query encoder's map of ``scope`` when its turns with
        vectors passed a new checkpoint (:func:`.query_encoder.checkpoint`), on the same
        turns the SQLite index's writer uses, so both give the same query vectors."""
        index, link, encoder = self.index, self._connected(), self.index._encoder
        if encoder is None:
            return
        name = index.embedder.name
        if not self._fits.known(scope):
            self._fits.counted(scope, 0)  # (a failed count is not retried in a loop)
            with link.lock:
                row = link.call(lambda c: c.execute(index._q(
                    "SELECT count(*) FROM {s}.turn_vectors WHERE user_id = %s AND model = %s"),
                    (scope, name)).fetchone(), "vector count", scope, write=False)
            self._fits.counted(scope, int(row[0]) if row else 0)
        point = self._fits.point(scope)
        if point == 0:
            return
        self._fits.fitted(scope, point, ok=False)  # until the fit below succeeds
        offset, limit = query_encoder.fit_window(point)
        pgvector = index._vector_type.startswith("vector")
        column = "vector_send(v.vec)" if pgvector else "v.vec"
        with link.lock:
            rows = link.call(lambda c: c.execute(index._q(
                f"SELECT t.text, {column} FROM {{s}}.turns t JOIN {{s}}.turn_vectors v"
                " ON v.turn_id = t.id AND v.model = %s WHERE t.user_id = %s"
                " AND v.user_id = %s ORDER BY t.id LIMIT %s OFFSET %s"),
                (name, scope, scope, limit, offset), binary=True).fetchall(),
                "query encoder fit", scope, write=False)
        blobs = [_from_wire(bytes(v), pgvector) for _, v in rows]
        keep = [n for n, b in enumerate(blobs) if len(b) == 4 * encoder.dim]
        if keep:
            import numpy as np

            matrix = np.frombuffer(b"".join(blobs[n] for n in keep), dtype=np.float32)
            encoder.fit(scope, [vectors.turn_text("", str(rows[n][0])) for n in keep],
                        matrix.reshape(len(keep), encoder.dim))
        self._fits.fitted(scope, point, ok=bool(keep))  # (no rows: no map, no retry loop)

    def _missing(self, scope: str) -> dict[int, str]:
        """The next turns of ``scope`` without a vector (back-fill), not queued."""
        index, link = self.index, self._connected()
        with self._cond:
            upto = self._backfill.get(scope, 0)
        with link.lock:
            rows = link.call(lambda c: c.execute(index._q(
                "SELECT t.id, t.text, EXISTS (SELECT 1 FROM {s}.turn_vectors v"
                " WHERE v.turn_id = t.id AND v.model = %s) FROM {s}.turns t"
                " WHERE t.user_id = %s AND t.id > %s ORDER BY t.id LIMIT %s"),
                (index.embedder.name, scope, upto, BACKFILL_CHUNK)).fetchall(),
                "vector back-fill", scope, write=False)
        with self._cond:
            queued = self._queue.get(scope, {})
            missing = {int(i): str(t) for i, t, has in rows if not has and int(i) not in queued}
            ids = sorted(missing)[:vectors.WRITE_BATCH]
            if len(rows) < BACKFILL_CHUNK and len(ids) == len(missing):
                self._backfill.pop(scope, None)  # the last step of this scope
            else:
                self._backfill[scope] = ids[-1] if len(ids) < len(missing) else int(rows[-1][0])
        return {i: missing[i] for i in ids}

    def _write(self, scope: str, batch: dict[int, str]) -> None:
        """Embed ``batch`` and its new words, then store both in one transaction."""
        index, link = self.index, self._connected()
        ids, texts = list(batch), list(batch.values())
        words = postgres_expand.new_words(index, link, scope, texts)
        blobs = [vectors.encode(v) for v in index.embedder.embed(
            [vectors.turn_text("", t) for t in texts])]
        word_blobs = [vectors.encode(v) for v in index.embedder.embed(words)] if words else []
        name = index.embedder.name

        def write(cur: Any) -> None:
            store_vectors(index, cur, scope, [(i, name, b) for i, b in zip(ids, blobs,
                                                                           strict=True)])
            postgres_expand.insert_words(index, cur, scope, words, word_blobs)

        with link.lock:
            link.call(write, "vector write", scope, write=True)
        index._vcache.put(dict(zip(ids, blobs, strict=True)))
        if index._encoder is not None:
            if self._fits.known(scope):
                self._fits.add(scope, len(ids))
            self._fits.want(scope)
        with index._lock:  # (a search loading the vocabulary meanwhile read them: no harm)
            postgres_expand.remember(index, scope, words, word_blobs)

    def _connected(self) -> PgLink:
        """The writer's connection (opened on first use)."""
        if self._link is None:
            self._link = PgLink(self.index.dsn, str(self.index.path))
        return self._link
