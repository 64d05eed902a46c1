"""Memory a process needs for the holographic provider with the embedding model.

Each row is a fresh Python process (a peak is per process) that opens a memory home with
the ``holographic`` provider and runs two turns: its peak resident size (``ru_maxrss``)
and its resident size at the end, with the model installed (MiniLM loaded, the query
encoder's token table prepared), with the model on the query (no token table), and
without the model. Needs ``make embeddings`` for the first two rows.

Run: .venv/bin/python benchmarks/bench_model_memory.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _report import print_table, write_json

CHILD = """
import json, resource, tempfile
from memoryport.api import open_memory
from memoryport.config import Config, MemorySettings
from memoryport.providers.holographic import HolographicProvider
home = tempfile.mkdtemp()
provider = HolographicProvider()
memory = open_memory(home, "default", config=Config(memory=MemorySettings(nudge_interval=0)),
                     providers=[provider], load_provider=False, platform="cli")
memory.start_session(source="cli")
for question in ("What did we decide about the sqlite schema?", "And the tests?"):
    memory.end_turn(memory.begin_turn(question), "We decided to keep FTS5 triggers.")
memory.flush(60)
pages = int(open("/proc/self/statm").read().split()[1])
print(json.dumps({"peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "end_mb": round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20),
                  "dense": provider.turns is not None and provider.turns.embedder is not None}))
memory.close()
"""

SETTINGS: list[tuple[str, dict[str, str]]] = [
    ("model, token table (default)", {}),
    ("model on the query", {"MEMORYPORT_QUERY_VECTORS": "model"}),
    ("no model", {"MEMORYPORT_EMBEDDINGS_MODEL": "/nonexistent"}),
]


def measure(env: dict[str, str]) -> dict[str, Any]:
    """Run the child process with ``env`` added; its JSON line."""
    done = subprocess.run([sys.executable, "-c", "import os\n" + CHILD], env={**os.environ, **env},
                          capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    """Measure each setting, print the table and write ``results/bench_model_memory.json``."""
    rows = [{"setting": name, **measure(env)} for name, env in SETTINGS]
    print_table("resident memory of a process with the holographic provider (two turns)", rows)
    path = write_json("bench_model_memory", {"rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
