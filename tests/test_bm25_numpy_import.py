"""The in-process BM25 imports numpy for its top only when it pays: a small store keeps
the Python loop unless numpy is imported already (by the model or the application)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_numpy_is_imported_for_the_top_only_past_a_store_size(tmp_path: Path) -> None:
    """A small store ranks with the loop rather than import numpy (0.1 s, 12 MB); past
    ``ARRAYS_IMPORT_TURNS`` stored turns a search imports it. A fresh process: here numpy
    is imported already."""
    script = f"""
import sys
from pathlib import Path
from memoryport.storage.turns import TurnIndex, TurnInput, bm25
assert bm25.ARRAYS and "numpy" not in sys.modules
with TurnIndex(Path({str(tmp_path / "h.db")!r}), dense=False) as index:
    index.add_turns([TurnInput("s", "Alice", f"tea garden {{i}}", 1.0 + i, "", None)
                     for i in range(30)])
    for _ in range(3):
        index.search("tea garden")
    assert index._cache.postings._terms and index._cache.postings._np is None
    assert "numpy" not in sys.modules
    bm25.ARRAYS_IMPORT_TURNS = 20
    index.search("tea garden")
    assert index._cache.postings._np is not None and "numpy" in sys.modules
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
