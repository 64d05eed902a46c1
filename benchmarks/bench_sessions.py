"""Session store benchmark: ingest throughput, size on disk, search/discover latency.

    python benchmarks/bench_sessions.py [--sizes 100000,1000000] [--queries 30]
        [--workdir DIR --reuse] [--backend sqlite|postgres|both] [--dsn postgresql://...]

``--backend postgres`` (or ``both``: SQLite and PostgreSQL from the same run) measures the
PostgreSQL session store on ``--dsn``, or, without one, on the distribution's PostgreSQL
started for the run (``tests/pgserver.py``) with durability back on (``fsync``,
``synchronous_commit``, ``full_page_writes``: the defaults a real server has). Each size
gets its own schema; ``--reuse`` keeps it (named ``bench_<n>``) like the SQLite files.

The stores run as an application role the schemas' owner grants them to
(``grant_app_role``; ``--pg-app-role NAME`` on a ``--dsn`` server, ``memoryport_app`` on
a started one): the policies bind it, and its word searches read the ``message_search``
view with the owner's rights, so the indexes serve them. ``--pg-leakproof`` marks the
search operators ``LEAKPROOF`` on the server the run starts instead, the other way to let
an index serve them under the policies (see ``_bench_pg.py``). A table of discover p95
per backend and size ends the output.

Ingest is measured three ways on the same corpus: one ``append_message`` per message
(the first 20k), batched (per session ``create_session`` then one ``append_messages`` of
its 20-200 messages: two write transactions per batch) and batched in one transaction
(one ``sync_sessions`` call per session: the same batches, each written with its new
session). ``commit_p50_ms`` is the median of the smallest write transaction
(``set_meta``): with durability on, PostgreSQL pays one WAL flush per write transaction,
so ``mean_batch / (2 * commit_p50_ms)`` bounds the batched figure whatever the insert
costs.

``--reuse`` keeps the batched databases in ``--workdir`` and, when one already exists,
skips both ingest runs for that size and measures latency on it (the 1M build takes
minutes); the ingest figures are then reported as ``null``.

The corpus replays LoCoMo dialogue (../shared/data/locomo-dev.json beside the repo) into sessions of
20-200 messages with varied sources, users and timestamps. To give every query class a
known shape, 40% of messages carry the word "really" (common), a Zipf-like pseudo-word
vocabulary adds a long tail, every 10,000th message has a rare word, 2% are CJK
sentences, and 0.2% contain punctuation tokens (user's, what?, a/b, #tag, @name).
Every query class is asserted to return hits (no silent empty results). Prints a table
and writes benchmarks/results/bench_sessions.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memoryport.providers.sessions import create_sessions_provider
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.records import SessionRecord
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev.json"
RESULTS = Path(__file__).parent / "results" / "bench_sessions.json"
SOURCES = ["cli", "cli", "api", "telegram", "discord", "cron", "tool", "mcp"]
CJK = [
    "我们明天去东京塔看看",
    "東京タワーに行きました",
    "서울에서 만나요 내일",
    "今天的天气很好",
    "京都の寺が好きです",
]
PUNCT = [
    "the user's favourite",
    "so what? no idea",
    "an a/b test",
    "filed as #tag",
    "ping @name now",
]


def _turns() -> list[str]:
    data = json.loads(DATA.read_text())
    out = []
    for conv in data:
        for key, value in conv["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                out.extend(f"{t['speaker']}: {t['text']}" for t in value)
    return out


def corpus(n: int, seed: int = 7) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Yield (session kwargs, messages) until ``n`` messages were produced."""
    rng = random.Random(seed)
    turns = _turns()
    vocab = [f"zq{i:05d}x" for i in range(50_000)]
    made, ts, sid = 0, 1.6e9, 0
    while made < n:
        size = min(rng.randint(20, 200), n - made)
        sid += 1
        session = {
            "session_id": f"s{sid:07d}",
            "source": rng.choice(SOURCES),
            "user_id": f"u{rng.randint(1, 20)}",
            "started_at": ts,
        }
        start = rng.randrange(len(turns))
        messages = []
        for i in range(size):
            text = turns[(start + i) % len(turns)]
            roll = rng.random()
            if roll < 0.02:
                text = rng.choice(CJK)
            elif roll < 0.022:
                text += " " + rng.choice(PUNCT)
            if (made + i) % 10_000 == 5_000:
                text += " quetzalcoatl"
            if rng.random() < 0.4:
                text += " really"
            text += " " + vocab[min(int(rng.paretovariate(1.1)) - 1, len(vocab) - 1)]
            ts += rng.uniform(1, 60)
            messages.append(
                {"role": "user" if i % 2 == 0 else "assistant", "content": text, "timestamp": ts}
            )
        made += size
        yield session, messages


class Backend:
    """Where one benchmark run keeps its stores (SQLite files in ``workdir``)."""

    name = "sqlite"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def open(self, label: str) -> SessionStore:
        """Open (creating) the store called ``label``."""
        return SQLiteSessionStore(self.workdir / f"{label}.db")

    def exists(self, label: str) -> bool:
        """True when a store called ``label`` was kept from an earlier run."""
        return (self.workdir / f"{label}.db").exists()

    def finish(self, store: SessionStore) -> None:
        """Flush after ingest (SQLite: checkpoint the WAL) and close."""
        assert isinstance(store, SQLiteSessionStore)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()

    def size(self, label: str) -> int:
        """Bytes the store takes on disk (tables and indexes)."""
        return os.path.getsize(self.workdir / f"{label}.db")

    def drop(self, label: str) -> None:
        """Delete the store called ``label``."""
        (self.workdir / f"{label}.db").unlink(missing_ok=True)

    def describe(self) -> dict[str, Any]:
        """Engine name and version for the report."""
        return {"backend": "sqlite", "version": __import__("sqlite3").sqlite_version}

    def server_cpu(self) -> float | None:
        """CPU seconds a database server has used so far (SQLite has none: ``None``)."""
        return None

    def writer_cpu(self) -> dict[int, float] | None:
        """CPU seconds of each server process serving the store, by pid (SQLite: ``None``)."""
        return None

    def close(self) -> None:
        """Release what the backend started (nothing for SQLite)."""


def _create(store: SessionStore, session: dict[str, Any]) -> str:
    return store.create_session(
        session["session_id"],
        source=session["source"],
        user_id=session["user_id"],
        started_at=session["started_at"],
    ).id


def ingest_single(backend: Backend, label: str, n: int) -> float:
    """Messages per second with one append_message call (one transaction) per message."""
    store = backend.open(label)
    start, count = time.perf_counter(), 0
    for session, messages in corpus(n, seed=1):
        sid = _create(store, session)
        for message in messages:
            store.append_message(sid, message)
            count += 1
    rate = count / (time.perf_counter() - start)
    store.close()
    return rate


def ingest_batched(backend: Backend, label: str, n: int) -> tuple[float, int, dict[str, Any]]:
    """Messages per second with one append_messages call per session; raw text bytes;
    CPU microseconds per message of this process (``client_us``) and, on PostgreSQL, of
    the server's processes (``server_us``) and of the backend serving the store alone
    (``backend_us``: without the WAL writer, checkpointer or autovacuum; ``None`` when
    they cannot be read).

    Each session costs two write transactions (``create_session``, then the batch)."""
    store = backend.open(label)
    raw, count, elapsed, cpu = 0, 0, 0.0, 0.0
    server_start = backend.server_cpu()
    writer_start = backend.writer_cpu()
    for session, messages in corpus(n):
        raw += sum(len(m["content"].encode()) for m in messages)
        start, cpu_start = time.perf_counter(), time.process_time()
        sid = _create(store, session)
        store.append_messages(sid, messages)
        elapsed += time.perf_counter() - start
        cpu += time.process_time() - cpu_start
        count += len(messages)
    server_end = backend.server_cpu()
    writer_end = backend.writer_cpu()
    backend.finish(store)
    server = None if server_start is None or server_end is None else server_end - server_start
    costs = {
        "client_us": round(1e6 * cpu / count, 1),
        "server_us": None if server is None else round(1e6 * server / count, 1),
        "backend_us": _writer_us(writer_start, writer_end, count),
    }
    return count / elapsed, raw, costs


def _writer_us(start: dict[int, float] | None, end: dict[int, float] | None, count: int) -> Any:
    """CPU microseconds per message of the store's backends between two ``writer_cpu``
    readings (a backend first seen at the end counts from zero)."""
    if start is None or end is None:
        return None
    return round(1e6 * sum(t - start.get(pid, 0.0) for pid, t in end.items()) / count, 1)


def ingest_one_transaction(backend: Backend, label: str, n: int) -> float:
    """Messages per second with one ``sync_sessions`` call per session: the same batches
    as :func:`ingest_batched`, each written with its new session in one transaction."""
    store = backend.open(label)
    count, elapsed = 0, 0.0
    for session, messages in corpus(n):
        record = SessionRecord(
            id=session["session_id"],
            source=session["source"],
            user_id=session["user_id"],
            started_at=session["started_at"],
            last_active_at=session["started_at"],
        )
        start = time.perf_counter()
        store.sync_sessions([(record, messages)])
        elapsed += time.perf_counter() - start
        count += len(messages)
    store.close()
    return count / elapsed


def commit_latency(backend: Backend, label: str, rounds: int = 200) -> float:
    """Median milliseconds of the smallest write transaction (``set_meta``): the floor
    every write call pays (on PostgreSQL with durability on, one WAL flush)."""
    store = backend.open(label)
    times = []
    for i in range(rounds):
        start = time.perf_counter()
        store.set_meta("bench_commit", str(i))
        times.append((time.perf_counter() - start) * 1000)
    store.close()
    return _pct(times, 0.5)


QUERY_CLASSES: dict[str, dict[str, Any]] = {
    "common word": {"query": "really"},
    "rare word": {"query": "quetzalcoatl"},
    "phrase": {"query": '"support group"'},
    "prefix": {"query": "photo*"},
    "sort=newest": {"query": "really", "sort": "newest"},
    "boolean": {"query": "really AND NOT photo"},
    "natural language": {"query": "When did Caroline go to the LGBTQ support group?"},
    "CJK 1 char": {"query": "京"},
    "CJK 2 chars": {"query": "東京"},
    "CJK trigram": {"query": "東京タワー"},
    "user's": {"query": "user's"},
    "what?": {"query": "what?"},
    "a/b": {"query": "a/b"},
    "#tag": {"query": "#tag"},
    "@name": {"query": "@name"},
}


def _timed(fn: Callable[[], Any], rounds: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return times, result


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 2)


def latency(store: SessionStore, rounds: int) -> dict[str, Any]:
    """p50/p95 of search_messages (limit 20) and of the discover tool call per class."""
    provider = create_sessions_provider(store)
    provider.initialize("none")
    out: dict[str, Any] = {}
    for name, args in QUERY_CLASSES.items():
        sort = args.get("sort", "relevance")
        search_t, result = _timed(
            lambda a=args, s=sort: store.search_messages(a["query"], sort=s, limit=20), rounds
        )
        if not result.hits:
            raise AssertionError(f"{name}: {args['query']!r} returned nothing (silent empty)")
        disc_t, disc = _timed(
            lambda a=args: json.loads(provider.handle_tool_call("session_search", dict(a))), rounds
        )
        if not disc.get("success") or not disc.get("count"):
            raise AssertionError(f"{name}: discover returned nothing: {disc}")
        out[name] = {
            "search_p50_ms": _pct(search_t, 0.5),
            "search_p95_ms": _pct(search_t, 0.95),
            "discover_p50_ms": _pct(disc_t, 0.5),
            "discover_p95_ms": _pct(disc_t, 0.95),
            "plan": result.plan,
            "hits": len(result.hits),
        }
    browse_t, _ = _timed(lambda: provider.handle_tool_call("session_search", {}), rounds)
    out["browse"] = {
        "discover_p50_ms": _pct(browse_t, 0.5),
        "discover_p95_ms": _pct(browse_t, 0.95),
    }
    return out


def run_size(n: int, rounds: int, backend: Backend, *, reuse: bool = False) -> dict[str, Any]:
    """Every measurement at one corpus size (``reuse``: an existing store skips ingest)."""
    single_n = min(n, 20_000)
    label = f"batched_{n}"
    raw_path = backend.workdir / f"{backend.name}-{label}.raw"
    single: float | None = None
    batched: float | None = None
    one_tx: float | None = None
    commit_ms: float | None = None
    raw: int | None = None
    costs: dict[str, Any] = {"client_us": None, "server_us": None, "backend_us": None}
    ingest_load: list[float] | None = None
    if reuse and backend.exists(label):
        raw = int(raw_path.read_text()) if raw_path.exists() else None
    else:
        backend.drop(label)
        single = ingest_single(backend, f"single_{n}", single_n)
        backend.drop(f"single_{n}")
        commit_ms = commit_latency(backend, f"commit_{n}")
        backend.drop(f"commit_{n}")
        one_tx = ingest_one_transaction(backend, f"one_tx_{n}", n)
        backend.drop(f"one_tx_{n}")
        ingest_load = [round(x, 2) for x in os.getloadavg()]
        batched, raw, costs = ingest_batched(backend, label, n)
        raw_path.write_text(str(raw))
    size = backend.size(label)
    load = [round(x, 2) for x in os.getloadavg()]
    store = backend.open(label)
    try:
        measured = latency(store, rounds)
    finally:
        store.close()
        if not reuse:
            backend.drop(label)
    return {
        **backend.describe(),
        "messages": n,
        "ingest_single_msg_s": None if single is None else round(single),
        "ingest_single_n": single_n,
        "ingest_batched_msg_s": None if batched is None else round(batched),
        "ingest_batched_cpu_us_per_msg": costs,
        "ingest_one_transaction_msg_s": None if one_tx is None else round(one_tx),
        "commit_p50_ms": commit_ms,
        "mean_batch": round(n / sum(1 for _ in corpus(n))),
        "ingest_batched_flush_bound_msg_s": _flush_bound(n, commit_ms),
        "raw_text_mb": None if raw is None else round(raw / 1e6, 2),
        "db_mb": round(size / 1e6, 2),
        "db_over_raw": None if raw is None else round(size / raw, 2),
        "bytes_per_message": round(size / n, 1),
        "load_average": load,
        "load_average_before_batched_ingest": ingest_load,
        "latency": measured,
    }


def _flush_bound(n: int, commit_ms: float | None) -> int | None:
    """Batched messages per second the disk alone allows: two WAL flushes (``commit_ms``
    each) per batch of the corpus's mean size, whatever the CPU costs (None: no flush)."""
    if not commit_ms:
        return None
    return round(n / sum(1 for _ in corpus(n)) / (2 * commit_ms / 1000))


def _print(report: dict[str, Any]) -> None:
    for res in report["sizes"]:
        print(f"\n== {res['backend']} {res['version']}: {res['messages']:,} messages ==")
        print(
            f"ingest one-by-one: {res['ingest_single_msg_s']} msg/s "
            f"(first {res['ingest_single_n']:,}); batched: {res['ingest_batched_msg_s']} msg/s"
            f"; load average before latency: {res['load_average']}"
        )
        cpu = res["ingest_batched_cpu_us_per_msg"]
        print(
            f"batched CPU per message: client {cpu['client_us']} us, server {cpu['server_us']}"
            f" us (the store's backend {cpu.get('backend_us')} us); load average before it:"
            f" {res['load_average_before_batched_ingest']}"
        )
        print(
            f"batched, one transaction per batch (sync_sessions): "
            f"{res['ingest_one_transaction_msg_s']} msg/s; mean batch {res['mean_batch']}"
            f" messages; smallest write transaction p50 {res['commit_p50_ms']} ms (two a"
            f" batch allow at most {res.get('ingest_batched_flush_bound_msg_s')} batched msg/s)"
        )
        print(
            f"db {res['db_mb']} MB for {res['raw_text_mb']} MB of text = "
            f"{res['db_over_raw']}x ({res['bytes_per_message']} B/message)"
        )
        print(
            f"{'query class':18} {'plan':8} {'hits':>4} {'search p50':>10} {'p95':>7} "
            f"{'discover p50':>12} {'p95':>7}"
        )
        for name, row in res["latency"].items():
            print(
                f"{name:18} {row.get('plan', ''):8} {row.get('hits', ''):>4} "
                f"{row.get('search_p50_ms', ''):>10} {row.get('search_p95_ms', ''):>7} "
                f"{row['discover_p50_ms']:>12} {row['discover_p95_ms']:>7}"
            )


def _print_scaling(report: dict[str, Any]) -> None:
    """Discover p95 (ms) of every class per backend and size, side by side."""
    columns = [(r["backend"], r["messages"], r["latency"]) for r in report["sizes"]]
    if len(columns) < 2:
        return
    heads = " ".join(f"{f'{b} {n // 1000}k':>16}" for b, n, _ in columns)
    print(f"\ndiscover p95 ms    {heads}")
    for name in columns[0][2]:
        cells = " ".join(
            f"{lat.get(name, {}).get('discover_p95_ms', ''):>16}" for *_, lat in columns
        )
        print(f"{name:18} {cells}")


def _backends(args: argparse.Namespace, workdir: Path) -> list[Backend]:
    names = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    out: list[Backend] = []
    for name in names:
        if name == "sqlite":
            out.append(Backend(workdir))
        else:
            from _bench_pg import PostgresBackend

            out.append(
                PostgresBackend(
                    workdir,
                    args.dsn,
                    keep=args.reuse,
                    leakproof=args.pg_leakproof,
                    app_role=args.pg_app_role,
                )
            )
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated corpus sizes")
    parser.add_argument("--queries", type=int, default=30, help="timed rounds per class")
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep stores in --workdir (PostgreSQL: schemas) and reuse one (skips its ingest)",
    )
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--dsn", default="", help="PostgreSQL to use (default: start one)")
    parser.add_argument(
        "--pg-leakproof",
        action="store_true",
        help="mark the search operators LEAKPROOF on the server this run starts (see _bench_pg)",
    )
    parser.add_argument(
        "--pg-app-role",
        default="",
        help="run the stores as this role, granted by the --dsn role (a started server: its own)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.reuse and args.workdir is None:
        parser.error("--reuse needs --workdir")
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        workdir = args.workdir if args.reuse else Path(tmp)
        backends = _backends(args, workdir)
        try:
            results = [
                run_size(n, args.queries, b, reuse=args.reuse) for n in sizes for b in backends
            ]
        finally:
            for b in backends:
                b.close()
    report = {"sqlite_version": __import__("sqlite3").sqlite_version, "sizes": results}
    _print(report)
    _print_scaling(report)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
