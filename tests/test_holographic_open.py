"""Eight processes opening a new ``holographic.db`` (turn index + fact store) at the same
moment all succeed: WAL is switched on with a bounded retry while another opener holds
the file (SQLite answers "database is locked" at once there; found by the SIGKILL test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

_OPENER = textwrap.dedent(
    """
    import json, os, sys, time
    from memoryport.storage.facts.records import FactInput
    from memoryport.storage.facts.store import FactStore
    from memoryport.storage.turns import TurnIndex, TurnInput
    db, go, tag = sys.argv[1], sys.argv[2], sys.argv[3]
    while not os.path.exists(go):
        time.sleep(0.001)
    try:
        index = TurnIndex(db, dense=False)
        index.add_turns([TurnInput("s-" + tag, "A", "hello walrus " + tag, 1.7e9)])
        store = FactStore(db)
        store.add(FactInput("Walrus " + tag + " likes herring"))
        print(json.dumps({"ok": [index.count(), store.count()]}))
        index.close()
        store.close()
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
    """
)


@pytest.mark.parametrize("trial", range(3))
def test_eight_processes_open_a_new_store_at_once(tmp_path: Path, trial: int) -> None:
    db, go = tmp_path / "holographic.db", tmp_path / "go"
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", _OPENER, str(db), str(go), str(n)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for n in range(8)]
    time.sleep(1.5)  # every interpreter is up and waiting on the go file
    go.write_text("go")
    outputs = [p.communicate(timeout=120) for p in procs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert all("ok" in r for r in results), [err[-1500:] for _, err in outputs] + results
    from memoryport.storage.facts.store import FactStore
    from memoryport.storage.turns import TurnIndex

    with TurnIndex(db, dense=False) as index:
        assert index.count() == 8 and len(index.search("walrus", limit=20)) == 8
    store = FactStore(db)
    assert store.count() == 8
    store.close()
