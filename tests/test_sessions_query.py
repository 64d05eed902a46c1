"""Query parsing: punctuation, syntax, fallbacks, CJK routing (pure, no database)."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryport.storage.sessions.query import (
    And,
    Not,
    Or,
    Term,
    compile_fts5,
    compile_like,
    has_cjk,
    make_snippet,
    parse_query,
)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("user's", '"user s"'),
        ("what?", '"what"'),
        ("a/b", '"a b"'),
        ("#tag", '"tag"'),
        ("@name", '"name"'),
        ("chat-send", '"chat send"'),
        ("content:foo", '"foo"'),
    ],
)
def test_punctuation_becomes_safe_terms(query: str, expected: str) -> None:
    parsed = parse_query(query, combine="all")
    assert parsed.root is not None
    assert compile_fts5(parsed.root) == expected


def test_ranked_or_splits_punctuated_words_and_expands_mixed_phrases() -> None:
    parsed = parse_query("chat-send user's")
    assert parsed.root is not None
    assert compile_fts5(parsed.root) == '("chat" OR "send" OR "user")'
    mixed = parse_query('book "Four Seasons"')
    assert mixed.root is not None
    assert compile_fts5(mixed.root) == '("book" OR "four seasons" OR "four" OR "seasons")'
    strict = parse_query('"four seasons"')
    assert strict.root is not None and compile_fts5(strict.root) == '"four seasons"'


def test_natural_language_drops_stopwords_and_ors() -> None:
    parsed = parse_query("When did Caroline go to the LGBTQ support group?")
    assert isinstance(parsed.root, Or)
    words = [t.tokens[0] for t in parsed.terms]
    assert words == ["caroline", "go", "lgbtq", "support", "group"]
    assert not parsed.explicit


def test_natural_language_all_combines_with_and() -> None:
    parsed = parse_query("docker compose", combine="all")
    assert isinstance(parsed.root, And)


def test_only_stopwords_are_kept() -> None:
    parsed = parse_query("what is it")
    assert [t.tokens for t in parsed.terms] == [("what",), ("is",), ("it",)]


def test_explicit_boolean_phrase_prefix() -> None:
    parsed = parse_query('"exact phrase" deploy* OR (alpha NOT beta)')
    assert parsed.explicit
    assert parsed.root is not None
    assert compile_fts5(parsed.root) == '(("exact phrase" AND "deploy"*) OR (("alpha") NOT "beta"))'
    assert not parsed.warnings


@pytest.mark.parametrize("query", ["AND OR", "NOT x", "a AND", "(a OR b", "a)", "NEAR(", "x OR"])
def test_malformed_syntax_falls_back_with_warning(query: str) -> None:
    parsed = parse_query(query)
    assert parsed.root is not None
    assert not parsed.explicit
    assert any("plain terms" in w for w in parsed.warnings)


def test_unbalanced_quote_is_ignored_with_warning() -> None:
    parsed = parse_query('"unbalanced words')
    assert [t.tokens for t in parsed.terms] == [("unbalanced",), ("words",)]
    assert parsed.warnings


def test_lone_star_has_no_terms() -> None:
    parsed = parse_query("*")
    assert parsed.root is None
    assert parsed.plan() == "empty"


def test_cjk_routing() -> None:
    assert has_cjk("東京") and has_cjk("안녕") and not has_cjk("tokyo")
    assert parse_query("東京タワー").plan() == "trigram"
    assert parse_query("東京").plan() == "like"
    assert parse_query("東京タワー 京").plan() == "like"
    assert parse_query("tokyo").plan() == "fts"


def test_like_escapes_wildcards() -> None:
    where, params = compile_like(Term(("a",), "50%_x"), "content")
    assert "LIKE ? ESCAPE" in where
    assert params == ["%50\\%\\_x%"]


def test_like_boolean_shape() -> None:
    node = And((Term(("a",), "東"), Not(Term(("b",), "京"))))
    where, params = compile_like(node, "c")
    assert where == "(c LIKE ? ESCAPE '\\' AND NOT (c LIKE ? ESCAPE '\\'))"
    assert params == ["%東%", "%京%"]


def test_snippet_marks_first_match() -> None:
    text = "x" * 200 + " the Needle here " + "y" * 200
    snippet = make_snippet(text, ["needle"])
    assert ">>>Needle<<<" in snippet and snippet.startswith("...") and snippet.endswith("...")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_parses_and_compiles_to_valid_fts5(text: str) -> None:
    parsed = parse_query(text)
    if parsed.root is None or parsed.plan() != "fts":
        return
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(content, tokenize='porter unicode61')")
    conn.execute("INSERT INTO f VALUES ('some text')")
    conn.execute("SELECT count(*) FROM f WHERE f MATCH ?", (compile_fts5(parsed.root),)).fetchone()
