"""The curated-write mirror's rows (issues 12/14): a ``memory`` add, replace and remove on
a default home leave the fact, its entities, its full-text entry and its revisions exactly
as the rows say, whatever shortcuts the write path takes (one ``UPDATE`` per update, the
changed row read back from it, cached content hashes and entity keys)."""

from __future__ import annotations

import json
from pathlib import Path

import memoryport
from memoryport.providers.holographic.provider import DB_NAME
from memoryport.storage.facts.entities import Entity, entity_key
from memoryport.storage.facts.records import FactInput, Provenance
from memoryport.storage.facts.store import FactStore
from memoryport.storage.facts.write import snapshot


def _contents(store: FactStore, query: str) -> list[str]:
    return [f.content for f in store.search(query, min_trust=0.0)]


def test_memory_add_replace_remove_leave_matching_rows(tmp_path: Path) -> None:
    memory = memoryport.open(tmp_path)
    memory.start_session("s1")
    calls = [
        {"action": "add", "target": "user", "content": "Works with Dana Reyes at Initech"},
        {"action": "replace", "target": "user", "old_text": "Dana Reyes",
         "content": "Works with Omar Haddad at Globex"},
        {"action": "add", "target": "user", "content": "Keeps a ficus named Fernando"},
        {"action": "remove", "target": "user", "old_text": "ficus"},
    ]
    for args in calls:
        result = json.loads(memory.call_tool("memory", args, tool_call_id="c1"))
        assert result["success"] is True, result
    memory.close()
    store = FactStore(tmp_path / DB_NAME)
    try:
        facts = store.list_facts(include_retired=True)
        by_content = {f.content: f for f in facts}
        assert set(by_content) == {"Works with Omar Haddad at Globex",
                                   "Keeps a ficus named Fernando"}
        moved = by_content["Works with Omar Haddad at Globex"]
        gone = by_content["Keeps a ficus named Fernando"]
        assert moved.live and not gone.live and gone.retired_reason == "removed"
        assert gone.valid_to == gone.retired_at == gone.updated_at
        assert {"Omar Haddad", "Globex"} <= set(moved.entities)
        assert not {"Dana Reyes", "Initech"} & set(moved.entities)
        assert store.probe("Dana Reyes") == [] and store.probe("Initech") == []
        assert [f.id for f in store.probe("Globex")] == [moved.id]
        # the full-text entry follows the content: the new words find it, the old do not
        assert _contents(store, "Globex Omar") == [moved.content]
        assert _contents(store, "Initech Dana") == []
        assert _contents(store, "ficus Fernando") == []
        history = store.revisions(moved.id)
        assert [r.action for r in history] == ["add", "update"]
        assert history[1].before is not None and history[1].after is not None
        assert history[1].before["content"] == "Works with Dana Reyes at Initech"
        assert history[1].after == snapshot(moved)
        removal = store.revisions(gone.id)[-1]
        assert removal.action == "remove" and removal.after == snapshot(gone)
        assert removal.before is not None and removal.before["retired_at"] is None
        found = store.find_live("works with omar haddad at globex.")
        assert found is not None and found.id == moved.id
    finally:
        store.close()


def test_update_without_new_content_keeps_the_full_text_entry(tmp_path: Path) -> None:
    store = FactStore(tmp_path / "facts.db")
    try:
        fact = store.add(FactInput("Orders oat milk lattes", provenance=Provenance(
            "s1", "m1", "tool", "model"))).fact
        trusted = store.update(fact.id, trust_delta=0.2)
        assert abs(trusted.trust_score - 0.7) < 1e-9 and trusted.tags == ""
        assert _contents(store, "oat lattes") == [fact.content]
        tagged = store.update(fact.id, tags="coffee breakfast", category="user_pref")
        assert (tagged.tags, tagged.category) == ("coffee breakfast", "user_pref")
        assert _contents(store, "breakfast") == [fact.content]
        same = store.update(fact.id, content="Orders oat milk lattes")
        assert same.content == fact.content and same.entities == fact.entities
        assert _contents(store, "oat lattes") == [fact.content]
        history = store.revisions(fact.id)
        assert [r.action for r in history] == ["add", "update", "update", "update"]
        assert history[-1].after == snapshot(store.get(fact.id) or fact)
        # a re-add in other case and spacing is the same fact (cached hash, same answer)
        again = store.add(FactInput("  orders OAT milk lattes. "))
        assert again.status == "duplicate" and again.fact.id == fact.id
    finally:
        store.close()


def test_an_entity_key_is_the_key_of_its_name() -> None:
    for name in ("The Louvre", "Bob's", "ACME Corp", "Zoë  Ng"):
        entity = Entity(name, "person")
        assert entity.key == entity.key == entity_key(name)
        assert entity == Entity(name, "person") and hash(entity) == hash(Entity(name, "person"))
