"""The two Mem0 backends behind one small interface: the platform ``MemoryClient`` and the
open-source ``Memory`` (local Qdrant and history database under the home).

Identity goes in ``filters`` for every read (mem0 2.x refuses a top-level ``user_id`` on
search) and for platform writes; the open-source ``add`` takes the ids as keywords. Mem0's
telemetry is turned off (``MEM0_TELEMETRY=False``) unless the environment says otherwise,
before mem0 is first imported.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
import threading
from pathlib import Path
from typing import Any

from memoryport.errors import ProviderError
from memoryport.providers.mem0.settings import Settings

__all__ = ["Backend", "HashEmbedder", "open_backend"]

_WORD = re.compile(r"\w+", re.UNICODE)


def _quiet_import(root: Path) -> None:
    """Telemetry off and mem0's own state dir under the home, unless the environment
    already says otherwise (mem0 reads both once, when first imported)."""
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(root))


class HashEmbedder:
    """A deterministic, offline embedder: hashed word and word-pair counts, L2-normalised.

    Lexical, not semantic, but needs no model download and no network; ``embedder: hash``.
    """

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.config = None

    def _bucket(self, token: str) -> int:
        return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")

    def embed(self, text: Any, memory_action: str | None = None) -> list[float]:
        """The vector of ``text``."""
        vector = [0.0] * self.dims
        words = [w for w in _WORD.findall(str(text).lower()) if len(w) > 1]
        for token in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
            vector[self._bucket(token) % self.dims] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_batch(self, texts: list[Any], memory_action: str = "add") -> list[list[float]]:
        """One vector per text."""
        return [self.embed(t, memory_action) for t in texts]


class Backend:
    """``add`` / ``search`` / ``get_all`` on either backend, serialised by one lock."""

    def __init__(self, client: Any, platform: bool, where: str) -> None:
        self.client = client
        self.platform = platform
        self.where = where
        self._lock = threading.Lock()

    def add(self, messages: list[dict[str, str]], ids: dict[str, str], *, infer: bool,
            metadata: dict[str, Any]) -> Any:
        """Store ``messages`` for the identities in ``ids``."""
        with self._lock:
            if self.platform:
                return self.client.add(messages, filters=dict(ids), infer=infer,
                                       metadata=metadata)
            return self.client.add(messages, infer=infer, metadata=metadata, **ids)

    def search(self, query: str, filters: dict[str, str], top_k: int) -> list[dict[str, Any]]:
        """Memories matching ``query`` within ``filters``, best first."""
        with self._lock:
            found = self.client.search(query, filters=dict(filters), top_k=top_k)
        return _results(found)

    def get_all(self, filters: dict[str, str], top_k: int) -> list[dict[str, Any]]:
        """Every memory within ``filters`` (at most ``top_k``)."""
        with self._lock:
            if self.platform:
                found = self.client.get_all(filters=dict(filters), page_size=top_k)
            else:
                found = self.client.get_all(filters=dict(filters), top_k=top_k)
        return _results(found)

    def close(self) -> None:
        """Release the database handles (oss) or the HTTP pool (platform)."""
        with self._lock:
            if self.platform:
                http = getattr(self.client, "client", None)
                if http is not None:
                    http.close()
                return
            self.client.close()
            store = getattr(self.client, "vector_store", None)
            qdrant = getattr(store, "client", None)
            if qdrant is not None:
                qdrant.close()


def _results(found: Any) -> list[dict[str, Any]]:
    rows = found.get("results") if isinstance(found, dict) else found
    if not isinstance(rows, list):
        return []
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("memory"), str)]


def oss_config(settings: Settings, root: Path) -> dict[str, Any]:
    """``Memory.from_config`` settings: Qdrant and the history database under ``root``."""
    dims = settings.dims
    embedder = "openai" if settings.embedder == "hash" else settings.embedder
    embed_config: dict[str, Any] = {"embedding_dims": dims}
    if settings.embedder == "hash":
        embed_config["api_key"] = "unused-by-the-hash-embedder"
    llm_config: dict[str, Any] = {"model": settings.llm_model} if settings.llm_model else {}
    if settings.llm == "openai" and not settings.openai_key_set:
        llm_config["api_key"] = "unset-no-llm-calls-with-infer-false"
    return {
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "memoryport", "path": str(root / "qdrant"),
            "embedding_model_dims": dims, "on_disk": True}},
        "embedder": {"provider": embedder, "config": embed_config},
        "llm": {"provider": settings.llm, "config": llm_config},
        "history_db_path": str(root / "history.db"),
    }


def open_backend(settings: Settings, home: Path) -> Backend:
    """Connect to the platform, or open the local ``Memory`` under ``<home>/mem0``."""
    root = home / "mem0"
    root.mkdir(parents=True, exist_ok=True)
    _quiet_import(root)
    if settings.platform:
        from mem0 import MemoryClient  # type: ignore[import-untyped]

        try:
            client = MemoryClient(api_key=settings.api_key, host=settings.host)
        except Exception as exc:  # the SDK's errors may quote server text; never the key
            raise ProviderError(f"mem0 platform at {settings.host}: cannot connect"
                                f" ({type(exc).__name__}); check the host and api_key",
                                provider="mem0") from None
        return Backend(client, True, settings.host)
    from mem0 import Memory

    memory = Memory.from_config(oss_config(settings, root))
    if settings.embedder == "hash":
        memory.embedding_model = HashEmbedder(settings.dims)
    return Backend(memory, False, str(root))
