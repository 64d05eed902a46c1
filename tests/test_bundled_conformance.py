"""Every bundled provider passes the conformance kit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memoryport.providers.curated import create_builtin_provider
from memoryport.providers.sessions import create_sessions_provider
from memoryport.storage.sessions.sqlite import SQLiteSessionStore
from memoryport.testing import ProviderConformance


class TestBuiltinCuratedMemoryConforms(ProviderConformance):
    def make_provider(self, home: Path) -> Any:
        return create_builtin_provider(home)


class TestSessionSearchProviderConforms(ProviderConformance):
    def make_provider(self, home: Path) -> Any:
        store = SQLiteSessionStore(home / "state.db")
        store.create_session("conformance", source="cli")
        store.append_message("conformance", {"role": "user", "content": "I prefer tea."})
        return create_sessions_provider(store)
