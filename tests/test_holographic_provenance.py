"""Issue 13 for facts: ``as_of`` search, supersession chains (``history``), ``why`` with
the source turn text, citations on recalled facts, and ``memoryport facts why``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from memoryport.cli import main
from memoryport.providers.holographic import HolographicProvider

MAY_1, JUNE_1, JULY_1 = 1682935200.0, 1685613600.0, 1688205600.0  # 2023, 10:00 UTC


def _provider(home: Path) -> HolographicProvider:
    provider = HolographicProvider()
    provider.initialize("s1", home=str(home))
    provider.sync_turn("Hi there. I live in Lisbon.", "", session_id="conv-lisbon-0001",
                       speaker="user", timestamp=MAY_1, source_id="D1:1")
    provider.sync_turn("Big news. I moved to Porto.", "", session_id="conv-porto-0002",
                       timestamp=JUNE_1, source_id="D2:4")
    provider.sync_turn("Update. I moved to Berlin.", "", session_id="conv-berlin-0003",
                       timestamp=JULY_1, source_id="D3:2")
    return provider


def _tool(provider: HolographicProvider, **args: Any) -> dict[str, Any]:
    return json.loads(provider.handle_tool_call("fact_store", args))  # type: ignore[no-any-return]


def _contents(result: dict[str, Any]) -> list[str]:
    return [r["content"] for r in result["results"]]


def test_search_as_of_answers_what_was_believed_then(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "home")
    assert _contents(_tool(provider, action="search", query="where do I live moved")) == [
        "I moved to Berlin"]
    for day, city in (("2023-05-15", "Lisbon"), ("2023-06-01", "Porto"),
                      ("2023-07-20T00:00:00Z", "Berlin")):
        found = _contents(_tool(provider, action="search", query="live moved", as_of=day))
        assert len(found) == 1 and city in found[0], (day, found)
    assert _tool(provider, action="search", query="live", as_of="2023-04-01")["count"] == 0
    bad = _tool(provider, action="search", query="live", as_of="last tuesday")
    assert bad["error_type"] == "ToolArgumentError" and "2024-03-01" in bad["error"]
    provider.shutdown()


def test_history_lists_the_supersession_chain(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "home")
    for fact_id in (1, 2, 3):
        result = _tool(provider, action="history", fact_id=fact_id)
        assert [f["fact_id"] for f in result["chain"]] == [1, 2, 3] and result["count"] == 3
    middle = _tool(provider, action="history", fact_id=2)
    assert [r["action"] for r in middle["revisions"]] == ["add", "retire"]
    assert _tool(provider, action="history", fact_id=99)["error_type"] == "ToolArgumentError"
    provider.shutdown()


def test_why_shows_provenance_and_the_source_turn(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "home")
    why = _tool(provider, action="why", fact_id=2)
    assert why["session_id"] == "conv-porto-0002" and why["message_id"] == "D2:4"
    assert why["source_kind"] == "turn" and why["actor"] == "extractor"
    assert why["source_text"] == "Big news. I moved to Porto." and why["valid_from"] == JUNE_1
    assert why["live"] is False and why["added"]["action"] == "add"
    added = _tool(provider, action="add", content="Dana prefers tabs")
    tool_why = _tool(provider, action="why", fact_id=added["fact_id"])
    assert tool_why["source_kind"] == "tool" and tool_why["actor"] == "model"
    assert _tool(provider, action="why")["error_type"] == "ToolArgumentError"
    provider.shutdown()


def test_recalled_facts_carry_a_short_citation(tmp_path: Path) -> None:
    provider = _provider(tmp_path / "home")
    text = provider.prefetch("where do I live now? moved")
    line = next(x for x in text.splitlines() if "Berlin" in x and "fact #" in x)
    assert line.endswith("(2023-07-01; fact #3, turn, session conv-berlin-…)")
    provider.shutdown()


def test_cli_facts_why_and_search_as_of(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _provider(home).shutdown()
    runner = CliRunner()
    out = runner.invoke(main, ["--home", str(home), "facts", "why", "2", "--json"])
    why = json.loads(out.output)
    assert out.exit_code == 0 and why["source_text"] == "Big news. I moved to Porto."
    assert [f["fact_id"] for f in why["chain"]] == [1, 2, 3]
    out = runner.invoke(main, ["--home", str(home), "facts", "why", "2"])
    assert "said: Big news. I moved to Porto." in out.output and "conv-porto-0002" in out.output
    out = runner.invoke(main, ["--home", str(home), "facts", "why", "42"])
    assert out.exit_code != 0 and "no fact #42" in out.output
    out = runner.invoke(main, ["--home", str(home), "facts", "search", "moved", "--as-of",
                               "2023-06-10", "--json"])
    found = json.loads(out.output)
    assert found["count"] == 1 and "Porto" in found["results"][0]["content"]
    out = runner.invoke(main, ["--home", str(home), "facts", "search", "moved", "--as-of", "x"])
    assert out.exit_code != 0 and "as_of must be a date" in out.output


def test_fact_time_words_resolve_at_write_time_against_the_turn(tmp_path: Path) -> None:
    """Issue 13: "I moved to Berlin last year" said on 2023-05-08 is an event of 2022
    (year precision, the words kept), valid from 2022-01-01 — so as_of answers follow the
    event, not the day it was mentioned."""
    import datetime as dt

    from memoryport.providers.holographic import HolographicProvider

    said = dt.datetime(2023, 5, 8, 13, 56).timestamp()
    provider = HolographicProvider()
    provider.initialize("s1", home=str(tmp_path))
    provider.sync_turn("I moved to Berlin last year.", "", session_id="conv",
                       timestamp=said)
    provider.sync_turn("I like green tea.", "", session_id="conv", timestamp=said)
    store = provider.store
    assert store is not None
    facts = {f.content: f for f in store.list_facts()}
    moved = facts["I moved to Berlin last year"]
    assert (moved.event_precision, moved.event_words) == ("year", "last year")
    assert moved.event_start == dt.datetime(2022, 1, 1).timestamp()
    assert moved.event_end == dt.datetime(2023, 1, 1).timestamp()
    assert moved.valid_from == moved.event_start
    tea = facts["I like green tea"]
    assert tea.event_start is None and tea.event_precision == "" and tea.valid_from == said
    believed = store.search("Berlin", as_of=dt.datetime(2022, 6, 1).timestamp())
    assert [f.content for f in believed] == ["I moved to Berlin last year"]
    provider.shutdown()


def test_fact_search_reads_time_words_against_the_store_not_the_clock(tmp_path: Path) -> None:
    """Issue 13: "last year" in a query is relative to the store's latest fact (here an
    imported 2023 conversation, not today); facts stated in the window or about an event
    in it rank first, and a query that only names a time still finds them."""
    import datetime as dt

    from memoryport.providers.holographic import HolographicProvider

    def at(*day: int) -> float:
        return dt.datetime(*day, 12).timestamp()

    provider = HolographicProvider()
    provider.initialize("s1", home=str(tmp_path))
    for text, when in [("I moved to Berlin last year.", at(2023, 5, 8)),
                       ("I like jazz.", at(2023, 5, 8)),
                       ("I like piano.", at(2022, 3, 10)),
                       ("I like hiking.", at(2021, 7, 1))]:
        provider.sync_turn(text, "", session_id="conv", timestamp=when)
    store = provider.store
    assert store is not None
    found = [f.content for f in store.search("what happened last year?", limit=5)]
    assert set(found[:2]) == {"I moved to Berlin last year", "I like piano"}
    assert "I like hiking" not in found[:2]
    only_time = [f.content for f in store.search("in 2021", limit=5)]
    assert only_time[0] == "I like hiking"
    assert store.search("I like", limit=5)  # no time words: unchanged behaviour
    provider.shutdown()
