"""``diagnose(home)``: find problems in a memoryport home and say how to fix each.

Each finding is a :class:`Check` (``ok``, ``warn`` or ``fail``, with a ``fix``); shells
print them (``memoryport doctor``) and decide the exit status. Nothing here changes the
home: the SQLite checks use a throw-away file, ``state.db`` is opened read-only, and the
provider is loaded and asked ``is_available()`` only.
"""

from __future__ import annotations

import contextlib
import sqlite3
import stat
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryport.admin.providers import PROBE_SESSION, probe_health
from memoryport.config import ConfigWarning, config_path, env_path, load_config, read_env
from memoryport.config.secrets import holds_secret
from memoryport.errors import ConfigError, MemoryportError
from memoryport.plugins import discover, load
from memoryport.storage.sessions.sqlite.migrations import MIGRATIONS

__all__ = ["Check", "MigrationStatus", "diagnose", "migration_status"]


@dataclass(frozen=True)
class MigrationStatus:
    """A SQLite session store's schema against the migrations this memoryport knows.

    ``applied`` as recorded in the file (sorted by name), ``known`` oldest first,
    ``pending`` known but not applied, ``unknown`` applied by a newer memoryport.
    """

    applied: list[str]
    known: list[str]
    pending: list[str]
    unknown: list[str]

    @property
    def current(self) -> str:
        """The last applied migration ("none" before the first)."""
        return self.applied[-1] if self.applied else "none"


def migration_status(applied: list[str]) -> MigrationStatus:
    """Compare the migration names recorded in a ``state.db`` with the known ones."""
    known = [name for name, _ in MIGRATIONS]
    return MigrationStatus(
        applied=list(applied),
        known=known,
        pending=[name for name in known if name not in applied],
        unknown=sorted(set(applied) - set(known)),
    )


@dataclass(frozen=True)
class Check:
    """One finding: ``status`` is ``ok``, ``warn`` or ``fail``; ``fix`` says what to do."""

    name: str
    status: str
    detail: str
    fix: str = ""


def _check_home(home: Path) -> Iterator[Check]:
    if not home.exists():
        yield Check("home", "warn", f"{home} does not exist yet", "run `memoryport setup`")
        return
    if not home.is_dir():
        yield Check("home", "fail", f"{home} is not a directory", f"move {home} away")
        return
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o022:
        yield Check("home", "fail", f"{home} is writable by others ({mode:o})", f"chmod 700 {home}")
    elif mode & 0o044:
        yield Check("home", "warn", f"{home} is readable by others ({mode:o})", f"chmod 700 {home}")
    else:
        yield Check("home", "ok", f"{home} ({mode:o})")
    if not _writable(home):
        yield Check(
            "home",
            "fail",
            f"{home} is read-only for you: reading works, but memory writes, chat "
            "history and `config set` will fail",
            f"make it writable (chmod u+w {home}) or choose another home with --home",
        )


def _writable(directory: Path) -> bool:
    """True when this user can create files in ``directory`` (checked for real)."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".doctor-"):
            return True
    except OSError:
        return False


def _check_env(home: Path) -> Iterator[Check]:
    path = env_path(home)
    if not path.exists():
        yield Check(".env", "ok", "no secrets file")
        return
    try:
        read_env(home)
    except MemoryportError as exc:
        yield Check(".env", "fail", str(exc), f"fix {path} (or run `memoryport setup` again)")
        return
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        yield Check(".env", "fail", f"{path} has mode {mode:o}", f"chmod 600 {path}")
    else:
        yield Check(".env", "ok", f"{path} ({mode:o})")


def _check_config(home: Path) -> Iterator[Check]:
    path = config_path(home)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConfigWarning)
        try:
            config = load_config(home)
        except MemoryportError as exc:
            yield Check("config", "fail", str(exc), f"edit {path}")
            return
    for warning in caught:
        if issubclass(warning.category, ConfigWarning):
            yield Check("config", "warn", str(warning.message), "remove or rename the key")
    mode = stat.S_IMODE(path.stat().st_mode) if path.is_file() else 0
    if mode & 0o077 and holds_secret(config.to_dict()):
        yield Check(
            "config",
            "warn",
            f"{path} holds a secret (a password or key) and has mode {mode:o}",
            f"chmod 600 {path}, or move the secret to .env with `memoryport setup`",
        )
    yield Check("config", "ok", str(path))


def _wal_directory(home: Path) -> tuple[Path | None, str]:
    """Where to try a WAL database: the home, or where it will be created; else why not."""
    if home.is_dir():
        if _writable(home):
            return home, "in the home directory"
        return None, f"{home} is read-only for you"
    probe = home.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.is_dir() and _writable(probe):
        return probe, f"in {probe} (where the home will be created; it does not exist yet)"
    return None, f"{home} does not exist and {probe} is not writable"


def _check_sqlite(home: Path) -> Iterator[Check]:
    version = sqlite3.sqlite_version
    upgrade = "use a Python build whose SQLite has FTS5 (SQLite >= 3.34 for trigram)"
    conn = sqlite3.connect(":memory:")
    try:
        try:
            conn.execute("CREATE VIRTUAL TABLE t5 USING fts5(body)")
            yield Check("sqlite fts5", "ok", f"SQLite {version}")
        except sqlite3.OperationalError as exc:
            yield Check("sqlite fts5", "fail", f"SQLite {version}: {exc}", upgrade)
        try:
            conn.execute("CREATE VIRTUAL TABLE t3 USING fts5(body, tokenize='trigram')")
            yield Check("sqlite trigram", "ok", "trigram tokenizer available")
        except sqlite3.OperationalError as exc:
            yield Check("sqlite trigram", "warn", f"no trigram tokenizer: {exc}", upgrade)
    finally:
        conn.close()
    yield from _check_wal(home)


def _check_wal(home: Path) -> Iterator[Check]:
    directory, where = _wal_directory(home)
    if directory is None:
        yield Check(
            "sqlite wal",
            "warn",
            f"WAL not checked: {where}",
            "make the home writable, or use --home",
        )
        return
    path = directory / f".doctor-{uuid.uuid4().hex}.db"
    conn = sqlite3.connect(path)
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{path}{suffix}").unlink()
    if str(mode).lower() == "wal":
        yield Check("sqlite wal", "ok", f"WAL journal works {where}")
    else:
        yield Check(
            "sqlite wal",
            "fail",
            f"WAL is not supported {where} (journal_mode={mode})",
            "put the home on a local file system (not NFS/SMB)",
        )


def _check_state_db(home: Path) -> Iterator[Check]:
    path = home / "state.db"
    if not path.exists():
        return
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        yield Check("state.db", "fail", f"cannot open {path}: {exc}", "check its permissions")
        return
    try:
        result = conn.execute("PRAGMA quick_check").fetchone()[0]
        if result != "ok":
            yield Check("state.db", "fail", f"integrity: {result}", f"restore {path} from backup")
            return
        has_table = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='_migrations'"
        ).fetchone()
        applied = (
            [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY name")]
            if has_table
            else []
        )
    except sqlite3.Error as exc:
        yield Check("state.db", "fail", f"{path}: {exc}", f"restore {path} from backup")
        return
    finally:
        conn.close()
    yield from _compare_migrations(applied)


def _compare_migrations(applied: list[str]) -> Iterator[Check]:
    status = migration_status(applied)
    if status.unknown:
        yield Check(
            "state.db",
            "fail",
            f"written by a newer memoryport (unknown migrations: {', '.join(status.unknown)})",
            "upgrade memoryport",
        )
    elif status.pending:
        yield Check(
            "state.db",
            "warn",
            f"schema at {status.current}; pending: {', '.join(status.pending)}",
            "they are applied automatically the next time the session store opens",
        )
    else:
        newest = status.known[-1] if status.known else "none"
        yield Check("state.db", "ok", f"schema up to date ({newest})")


def _check_reachable(name: str, provider: Any, home: Path) -> Iterator[Check]:
    """For a provider with a backend (one that has a ``status()`` method): run it once
    (initialize + one recall, as ``status`` does) and ask ``status()`` whether the backend
    answers; a fault names the backend. Local providers are not run (doctor writes
    nothing)."""
    report = getattr(provider, "status", None)
    if not callable(report) or not home.is_dir():
        return
    try:
        health = probe_health(provider, home, load_config(home)).get(name, {})
    except Exception as exc:  # doctor reports, never crashes
        yield Check("provider", "fail", f"{name!r} could not be run: {exc}",
                    "see `memoryport status`")
        return
    for hook in ("initialize", "prefetch"):
        error = health.get("hooks", {}).get(hook, {}).get("last_error")
        if error:
            yield Check("provider", "fail", f"{name!r} {hook} failed: {error}",
                        f"check the backend and `memoryport setup {name}`")
    try:
        provider.initialize(PROBE_SESSION, home=str(home), platform="cli",
                            agent_context="subagent")
        answer = report()
    except Exception as exc:
        yield Check("provider", "fail", f"{name!r} status failed: {exc}",
                    f"check the backend and `memoryport setup {name}`")
        return
    finally:
        with contextlib.suppress(Exception):
            provider.shutdown()
    if isinstance(answer, dict) and answer.get("reachable") is False:
        where = answer.get("url") or "its backend"
        yield Check("provider", "fail",
                    f"{name!r} cannot reach {where}: {answer.get('error') or 'no answer'}",
                    "start the backend or fix its URL/key with "
                    f"`memoryport setup {name}`")
    elif isinstance(answer, dict) and answer.get("reachable"):
        yield Check("provider", "ok", f"{name!r} reaches {answer.get('url') or 'its backend'}")


def _check_provider(home: Path) -> Iterator[Check]:
    found = discover(home)
    for problem in found.problems:
        yield Check("plugins", "warn", problem, "remove or rename one of the plugins")
    try:
        name = load_config(home).memory.provider
    except MemoryportError:
        return
    if not name:
        yield Check("provider", "ok", "built-in memory only")
        return
    if found.get(name) is None:
        yield Check(
            "provider",
            "fail",
            f"{name!r} is selected but not installed",
            f"install it (pip or <home>/plugins/{name}/), or `memoryport setup builtin`",
        )
        return
    result = load(name, home, discovery=found)
    if result.provider is None:
        last = (result.traceback or result.error).strip().splitlines()[-1:]
        yield Check(
            "provider",
            "fail",
            f"{name!r} fails to load: {' '.join(last)}",
            f"see `memoryport status` for the traceback; reinstall {name}",
        )
        return
    try:
        available = bool(result.provider.is_available())
    except Exception as exc:
        available = False
        yield Check("provider", "warn", f"is_available() raised {exc!r}", "report it upstream")
    if available:
        yield Check("provider", "ok", f"{name!r} is available")
        yield from _check_reachable(name, result.provider, home)
    else:
        yield Check(
            "provider",
            "fail",
            f"{name!r} is not available (missing config, keys or dependencies)",
            f"run `memoryport setup {name}` and check `memoryport status`",
        )


def _check_sessions(home: Path) -> Iterator[Check]:
    try:
        settings = load_config(home).sessions
    except MemoryportError:
        yield from _check_state_db(home)  # the config check already reported the config
        return
    if settings.backend != "postgres":
        state = list(_check_state_db(home))
        yield from state
        if any(check.status == "fail" for check in state):
            yield Check(
                "sessions",
                "fail",
                f"the SQLite session store at {home / 'state.db'} cannot be used (see state.db)",
                "fix state.db as said above; session history is unavailable until then",
            )
        else:
            yield Check("sessions", "ok", f"SQLite session store at {home / 'state.db'}")
        return
    if not settings.dsn:
        yield Check(
            "sessions",
            "fail",
            "sessions.backend is 'postgres' but sessions.dsn is empty",
            "memoryport config set sessions.dsn postgresql://USER@HOST/DB",
        )
        return
    try:
        from memoryport.storage.sessions.postgres import connect as pg
    except ConfigError as exc:
        yield Check("sessions", "fail", str(exc), "pip install 'memoryport[postgres]'")
        return
    problem = pg.connection_problem(settings.dsn, timeout=pg.CONNECT_TIMEOUT_S)
    if problem is not None:
        yield Check("sessions", "fail", problem, pg.HINT)
    else:
        yield Check("sessions", "ok", f"PostgreSQL at {pg.describe_dsn(settings.dsn)} reachable")
        from memoryport.admin.doctor_postgres import postgres_checks

        yield from (Check(*found) for found in postgres_checks(settings.dsn))


def _check_general_plugins(home: Path) -> Iterator[Check]:
    """Each enabled Hermes general plugin: installed, loads, and its ``ctx`` calls mapped."""
    from memoryport.plugins.general import general_report

    try:
        report = general_report(home, load_config(home), check=True)
    except MemoryportError:
        return  # the config check already reported the config
    for problem in report["problems"]:
        yield Check("plugins", "warn", problem, "fix plugins.* in config.yaml or the plugin")
    for row in report["plugins"]:
        if not row["enabled"]:
            continue
        name = row["name"]
        if not row["installed"] or row.get("error"):
            error = row.get("error") or "not installed"
            yield Check("plugin", "fail", f"{name!r}: {error}",
                        f"install it, or `memoryport plugins disable {name}`")
            continue
        tools = ", ".join(row.get("tools") or []) or "no tools"
        yield Check("plugin", "ok", f"{name!r} loads ({tools})")
        for warning in row.get("warnings") or []:
            yield Check("plugin", "warn", f"{name!r}: {warning}", "see `memoryport plugins list`")


_CHECKS = (
    _check_home,
    _check_env,
    _check_config,
    _check_sqlite,
    _check_sessions,
    _check_provider,
    _check_general_plugins,
)


def diagnose(home: Path) -> list[Check]:
    """Run every check against ``home`` and return the findings in order.

    Never raises: a check that fails unexpectedly becomes a ``fail`` finding. Checks, in
    order: the home directory, ``.env``, ``config.yaml``, SQLite (FTS5, trigram, WAL), the
    session store (``state.db`` integrity and schema, or the PostgreSQL server), the
    selected provider (installed, loads, available), each enabled general plugin.
    """
    checks: list[Check] = []
    with warnings.catch_warnings():
        # The config check reports each ConfigWarning; other steps must not repeat them.
        warnings.simplefilter("ignore", ConfigWarning)
        for group in _CHECKS:
            checks.extend(_guarded(group, home))
    return checks


def _guarded(group: Callable[[Path], Iterator[Check]], home: Path) -> list[Check]:
    """Run one check group; an error it raises becomes a ``fail`` finding, not a crash."""
    name = group.__name__.removeprefix("_check_").replace("_", " ")
    found: list[Check] = []
    try:
        found.extend(group(home))
    except (MemoryportError, OSError, sqlite3.Error) as exc:
        found.append(Check(name, "fail", str(exc), "fix the cause above and run doctor again"))
    except Exception as exc:  # doctor reports; it must never die with a traceback
        found.append(Check(name, "fail", f"{type(exc).__name__}: {exc}", "report it upstream"))
    return found
