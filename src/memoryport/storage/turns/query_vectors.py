"""Query vectors of a turn index's searches: embedded beside the lexical work, kept by text.

Embedding the query (all-MiniLM-L6-v2: about 276 million multiply-adds for a 16-token
question, 8-12 ms of one core here) is most of a search's cost with the model on, and
the lexical part (BM25, candidate rows, the other signals) does not need it. So a search
starts its query's embedding on this index's query thread before the lexical part
(:meth:`QueryVectors.start`) and takes it when the ``dense`` signal needs it
(:meth:`QueryVectors.get`): the search waits for the longer of the two, not their sum
(numpy's matrix products and SQLite's steps release the interpreter, so on two cores the
two run at once).

The text embedded is the query without the speakers' names (:func:`.vectors.query_text`)
of the candidate turns, which only the lexical part finds; it is guessed from the names of
the scope's speakers seen so far (:meth:`QueryVectors.spoke`; the background writer reads
every turn's speaker). A wrong guess (a speaker named in the query with no candidate turn,
or a new speaker) costs a second embedding, never a different vector: :meth:`get` embeds
exactly the text it is asked for. The last :data:`KEEP` query vectors are kept by exact
text (a search asks for its vector more than once: the dense signal and the expansion).

While a query is being embedded, :attr:`QueryVectors.idle` is clear: the background
writer waits for it before embedding its next batch (and between the model's layers), so
a search has the CPU the writer would take.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable

__all__ = ["AHEAD", "KEEP", "QueryVectors", "WriterThread"]

AHEAD = True
"""Whether a search starts its query's embedding before its lexical part (False: the
query is embedded when the dense signal needs it, on the search's thread)."""

KEEP = 16
"""How many query vectors are kept (by exact text, least recently used dropped)."""


class WriterThread:
    """What this module's :class:`QueryVectors` and the background vector writers
    (:class:`~.vectors.DenseIndex`, PostgreSQL's :class:`~.postgres_vectors.VectorWriter`)
    share: a condition guarding their state, the
    stop flag and the thread (started on first work)."""

    _cond: threading.Condition
    _stopping: bool
    _thread: threading.Thread | None

    def _halt(self, timeout: float) -> threading.Thread | None:
        """Set the stop flag, wake the thread and wait up to ``timeout`` seconds for it
        (not when called from the thread itself); the thread, None if never started."""
        with self._cond:
            self._stopping = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return thread


class QueryVectors(WriterThread):
    """One index's query vectors (see the module docstring).

    ``embed`` is the embedder's ``embed``; ``guess`` turns a query and the scope's known
    speakers into the text the search will embed (:func:`.vectors.query_text`).
    """

    def __init__(self, embed: Callable[[list[str]], list[array[float]]],
                 guess: Callable[[str, Iterable[str]], str]) -> None:
        self._embed, self._guess = embed, guess
        self._kept: OrderedDict[str, array[float]] = OrderedDict()
        self._speakers: dict[str, set[str]] = {}
        self._cond = threading.Condition()
        self._asked: str | None = None  # the text the query thread is to embed next
        self._running: str | None = None  # the text it is embedding
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._here = 0  # get() calls embedding on their own thread
        self.idle = threading.Event()
        """Set unless a query is being embedded (the background writer waits for it)."""
        self.idle.set()

    def spoke(self, scope: str, speakers: Iterable[str]) -> None:
        """Remember speakers of ``scope``'s turns (for the guessed text)."""
        known = self._speakers.setdefault(scope, set())
        known.update(s for s in speakers if s not in known)

    def start(self, query: str, scope: str) -> None:
        """Start embedding the guessed text of ``query`` in ``scope`` on the query thread
        (nothing when it is kept or being embedded already, or :data:`AHEAD` is off)."""
        if not AHEAD:
            return
        text = self._guess(query, self._speakers.get(scope, ()))
        with self._cond:
            if self._stopping or text in self._kept or text in (self._asked, self._running):
                return
            self._asked = text
            self.idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="memoryport-query-vectors")
                self._thread.start()
            self._cond.notify_all()

    def get(self, text: str) -> array[float]:
        """The vector of exactly ``text``: kept, or awaited from the query thread when it
        is embedding (or about to embed) it, else embedded here."""
        with self._cond:
            while True:
                held = self._kept.get(text)
                if held is not None:
                    self._kept.move_to_end(text)
                    return held
                if self._stopping or text not in (self._asked, self._running):
                    break
                self._cond.wait()
            self._here += 1
            self.idle.clear()
        try:
            vec = self._embed([text])[0]
        finally:
            with self._cond:
                self._here -= 1
                self._settle()
        with self._cond:
            self._keep(text, vec)
        return vec

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the query thread (after the embedding it is running)."""
        self._halt(timeout)
        self.idle.set()

    def _keep(self, text: str, vec: array[float]) -> None:
        self._kept[text] = vec
        self._kept.move_to_end(text)
        while len(self._kept) > KEEP:
            self._kept.popitem(last=False)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stopping or self._asked is not None)
                if self._stopping:
                    return
                text, self._asked = self._asked, None
                self._running = text
            assert text is not None
            vec: array[float] | None = None
            try:
                vec = self._embed([text])[0]
            except Exception:  # get() embeds it again and raises there
                vec = None
            with self._cond:
                if vec is not None:
                    self._keep(text, vec)
                self._running = None
                self._settle()
                self._cond.notify_all()

    def _settle(self) -> None:
        """Set :attr:`idle` when nothing is being embedded or asked for (caller holds the
        condition)."""
        if self._asked is None and self._running is None and not self._here:
            self.idle.set()
