"""Peak Python memory (tracemalloc) of moving one huge session between homes.

Builds a SQLite home holding one session of ``--messages`` messages (``--size``
characters each), then, each in a fresh subprocess so peaks do not mix:

* ``copy``: ``memoryport storage copy``'s session step (``admin.storage.copy_sessions``)
  into a PostgreSQL server (started for the run unless ``--dsn``);
* ``import``: ``memoryport import`` of an archive holding that session into a new
  SQLite home (``admin.archive.import_archive``'s session step);

and prints the tracemalloc peak of each beside the size of the session's text, so a
figure can be read as "times the session". Writes ``--json``.

    .venv/bin/python benchmarks/bench_import_memory.py --messages 50000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

_BUILD = """
import sys
from pathlib import Path
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
home, count, size = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
home.mkdir(parents=True, exist_ok=True)
store = SQLiteSessionStore(home / "state.db")
store.create_session("huge", source="cli", started_at=1.7e9)
word = "lorem ipsum dolor sit amet consectetur "
text = (word * (size // len(word) + 1))[:size]
for start in range(0, count, 5000):
    store.append_messages("huge", [{"role": "user" if i % 2 else "assistant",
                                    "content": f"{i} {text}", "timestamp": 1.7e9 + i}
                                   for i in range(start, min(count, start + 5000))])
store.close()
"""

_MEASURE = """
import json, sys, tracemalloc
from pathlib import Path
kind, home, arg = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
tracemalloc.start()
if kind == "copy":
    from memoryport.admin.storage import copy_sessions
    report = copy_sessions(home, arg)
    done = report.messages
else:
    from memoryport.admin import archive
    result = archive.import_archive(home, Path(arg))
    done = result.counts.get("messages", 0)
current, peak = tracemalloc.get_traced_memory()
print(json.dumps({"peak": peak, "messages": done}))
"""


def _run(code: str, *args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    lines = out.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def main(argv: list[str] | None = None) -> int:
    """Build, measure, print, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=400, help="characters per message")
    parser.add_argument("--dsn", default="")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    import _locomo_pg

    report: dict[str, Any] = {"messages": args.messages, "size": args.size,
                              "text_bytes": args.messages * args.size,
                              "load": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        _run(_BUILD, str(source), str(args.messages), str(args.size))
        from memoryport.admin import archive

        bundle = Path(tmp) / "home.zip"
        archive.export_home(source, bundle)
        with _locomo_pg.postgres_dsn(args.dsn) as dsn:
            report["copy"] = _run(_MEASURE, "copy", str(source), dsn)
        report["import"] = _run(_MEASURE, "import", str(Path(tmp) / "target"), str(bundle))
    for kind in ("copy", "import"):
        row = report[kind]
        print(f"{kind:<7} {row['messages']} messages  peak {row['peak'] / 2**20:8.1f} MiB"
              f"  ({row['peak'] / report['text_bytes']:.2f} x the session's text)")
    print("load average", report["load"], "->", os.getloadavg())
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
