"""Search-query parsing shared by every session-store backend. No SQL dialect lives here
except the FTS5 compiler, which PostgreSQL simply does not call.

We tokenize queries ourselves instead of handing raw text to the engine, so punctuation
(``user's``, ``what?``, ``a/b``, ``#tag``, ``@name``, ``chat-send``) never produces a syntax
error or a silent empty result. Supported syntax:

* keywords: ``docker compose`` (natural language: stopwords dropped, terms ORed and ranked
  by BM25 when sorting by relevance; ANDed when sorting by time);
* phrases: ``"exact words"``; prefixes: ``deploy*``;
* booleans: ``a AND b``, ``a OR b``, ``a NOT b``, parentheses (operators in upper case);
* column filters ``content:foo`` are accepted and searched over every column.

Anything the grammar does not accept (``AND OR``, unbalanced quotes or parentheses,
``NEAR(``, a lone ``*``) falls back to a plain-terms query with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from memoryport.errors import StoreError
from memoryport.types import valid_text

__all__ = [
    "MAX_NESTING",
    "MAX_QUERY_CHARS",
    "STOPWORDS",
    "And",
    "Node",
    "Not",
    "Or",
    "ParsedQuery",
    "QueryError",
    "Term",
    "compile_fts5",
    "compile_like",
    "compile_trigram",
    "has_cjk",
    "literal_node",
    "literals_of",
    "make_snippet",
    "parse_query",
]

MAX_QUERY_CHARS = 2048
"""Queries longer than this are truncated (with a warning)."""

MAX_NESTING = 64
"""Parentheses may nest at most this deep; deeper queries raise :class:`QueryError`."""


class QueryError(StoreError):
    """A search query the parser refuses (today: parentheses nested too deep)."""


_CJK_CLASS = (
    "\u3000-\u303f\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002a6df"
)
_CJK = re.compile(f"[{_CJK_CLASS}]")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_COLUMN_FILTER = re.compile(r"^(content|tool_name|tool_calls|role|text)\s*:", re.IGNORECASE)
_OPERATORS = frozenset({"AND", "OR", "NOT"})
_PUNCT = re.compile(r"[^\w\s]|_")
_SENTENCE_END = ".,!?;:"

_STOPWORD_TEXT = """
a about above after again against all am an and any are aren as at be because been before
being below between both but by can could couldn did didn do does doesn doing don down
during each few for from further had hadn has hasn have haven having he her here hers
herself him himself his how i if in into is isn it its itself just ll me might more most
must my myself no nor not now of off on once only or other our ours ourselves out over own
re s same she should so some such t than that the their theirs them themselves then there
these they this those through to too under until up ve very was wasn we were weren what
when where which while who whom why will with won would you your yours yourself yourselves
d m o y ever also
kind type many much describe
"""

STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
"""English stopwords dropped from natural-language queries (kept if nothing else is left)."""


def has_cjk(text: str) -> bool:
    """True when ``text`` contains a CJK, kana or Hangul character."""
    return not text.isascii() and _CJK.search(text) is not None


@dataclass(frozen=True)
class Term:
    """A word or phrase. ``tokens`` are case-folded word tokens (several = a phrase);
    ``text`` is the substring form used by trigram and LIKE plans."""

    tokens: tuple[str, ...]
    text: str
    prefix: bool = False
    quoted: bool = False
    literal: str = ""
    """The term as written when it holds punctuation the word index drops (``what?``,
    ``a/b``, ``#tag``, ``C#``); ``""`` otherwise."""

    @property
    def is_cjk(self) -> bool:
        """True when the term contains CJK characters."""
        return has_cjk(self.text)


@dataclass(frozen=True)
class Not:
    """Exclusion of ``child``; only valid inside an ``And`` with a positive sibling."""

    child: Node


@dataclass(frozen=True)
class And:
    """All positive children match and no ``Not`` child does."""

    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    """Any child matches."""

    children: tuple[Node, ...]


Node: TypeAlias = Term | Not | And | Or


@dataclass(frozen=True)
class ParsedQuery:
    """The result of :func:`parse_query`.

    ``root`` is the boolean tree (``None`` when nothing searchable remains); ``explicit``
    says the user wrote boolean syntax (AND/OR/NOT, parentheses) -- quoted phrases and
    ``prefix*`` terms alone keep natural-language combining; ``terms`` are every positive
    term in order.
    """

    raw: str
    root: Node | None
    terms: tuple[Term, ...]
    explicit: bool
    warnings: tuple[str, ...] = field(default_factory=tuple)
    literals: tuple[str, ...] = ()
    """Punctuated text to rank first (messages containing it literally, case-insensitive;
    see :func:`literals_of`). Empty when the query holds no such punctuation."""

    @property
    def cjk(self) -> bool:
        """True when any term contains CJK characters."""
        return any(t.is_cjk for t in iter_terms(self.root))

    def plan(self) -> str:
        """``fts``, ``trigram`` (CJK, every term >= 3 chars), ``like`` (short CJK) or ``empty``."""
        if self.root is None:
            return "empty"
        if not self.cjk:
            return "fts"
        if all(len(t.text) >= 3 for t in iter_terms(self.root)):
            return "trigram"
        return "like"

    def plain(self, combine: str = "any") -> ParsedQuery:
        """The plain-terms version: non-stopword terms ORed (``any``) or ANDed (``all``)."""
        plain = _plain_query(self.raw, list(self.terms), combine, self.warnings)
        return replace(plain, literals=self.literals)

    def read_as(self) -> str:
        """How the query was read, for people and models: the words searched, and the
        literal text ranked first."""
        words = sorted({" ".join(t.tokens) for t in iter_terms(self.root, negated=False)})
        if not words:
            return "no searchable words"
        text = "words: " + ", ".join(words)
        if self.literals:
            text += (
                "; messages containing "
                + " and ".join(repr(lit) for lit in self.literals)
                + " literally ranked first"
            )
        return text


def iter_terms(node: Node | None, *, negated: bool = True) -> Iterator[Term]:
    """Yield every term in the tree (``negated=False`` skips terms under ``Not``)."""
    if node is None:
        return
    if isinstance(node, Term):
        yield node
    elif isinstance(node, Not):
        if negated:
            yield from iter_terms(node.child, negated=negated)
    else:
        for child in node.children:
            yield from iter_terms(child, negated=negated)


# ---------------------------------------------------------------------------- lexing

_Token: TypeAlias = tuple[str, object]  # ("term", Term) | ("op", "AND") | ("(", None) | (")", None)


def _chunk_term(chunk: str, *, quoted: bool = False) -> Term | None:
    prefix = chunk.endswith("*") and not quoted
    body = chunk.rstrip("*") if prefix else chunk
    body = _COLUMN_FILTER.sub("", body) if not quoted else body
    tokens = tuple(t.casefold() for t in _WORD.findall(body))
    if not tokens:
        return None
    text = body.strip(" \t\r\n\"'`.,;:!?()[]{}<>#@*/\\|&^~=+-")
    literal = body.strip() if _PUNCT.search(body) else ""
    return Term(tokens, text or " ".join(tokens), prefix, quoted, literal)


def _lex(query: str, warnings: list[str]) -> list[_Token]:
    out: list[_Token] = []
    for match in re.finditer(r'"([^"]*)"(\*?)|(\S+)', query):
        if match.group(3) is None:
            term = _chunk_term(match.group(1), quoted=True)
            if term is not None:
                out.append(("term", replace(term, prefix=bool(match.group(2)))))
            continue
        out.extend(_lex_bare(match.group(3), warnings))
    return out


def _lex_bare(chunk: str, warnings: list[str]) -> Iterator[_Token]:
    if chunk in _OPERATORS:
        yield ("op", chunk)
        return
    if '"' in chunk:
        warnings.append("an unmatched quote was ignored")
        chunk = chunk.replace('"', " ")
    if _COLUMN_FILTER.match(chunk):
        warnings.append("column filters are not supported; searched every column")
    for part in re.split(r"([()])|\s+", chunk):
        if not part:
            continue
        if part in "()":
            yield (part, None)
            continue
        term = _chunk_term(part)
        if term is not None:
            yield ("term", term)


# ---------------------------------------------------------------------------- parsing


class _SyntaxProblem(Exception):
    pass


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.explicit = False
        self.depth = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse(self) -> Node:
        node = self.expr()
        if self.peek() is not None:
            raise _SyntaxProblem("unexpected input after the expression")
        return node

    def expr(self) -> Node:
        children = [self.and_expr()]
        while self.peek() == ("op", "OR"):
            self.take()
            self.explicit = True
            children.append(self.and_expr())
        return children[0] if len(children) == 1 else Or(tuple(children))

    def and_expr(self) -> Node:
        children: list[Node] = []
        while (token := self.peek()) is not None and token not in (("op", "OR"), (")", None)):
            if token == ("op", "AND"):
                self.take()
                self.explicit = True
                if not children:
                    raise _SyntaxProblem("AND needs a term on its left")
                if self.peek() in (None, ("op", "OR"), (")", None), ("op", "AND")):
                    raise _SyntaxProblem("AND needs a term on its right")
                continue
            if token == ("op", "NOT"):
                self.take()
                self.explicit = True
                if not any(not isinstance(c, Not) for c in children):
                    raise _SyntaxProblem("NOT needs a term on its left")
                children.append(Not(self.primary()))
                continue
            children.append(self.primary())
        if not children or all(isinstance(c, Not) for c in children):
            raise _SyntaxProblem("an operator has nothing to combine")
        return children[0] if len(children) == 1 else And(tuple(children))

    def primary(self) -> Node:
        token = self.peek()
        if token is None:
            raise _SyntaxProblem("the query ends with an operator")
        kind, value = self.take()
        if kind == "(":
            self.explicit = True
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise QueryError(
                    f"the search query nests parentheses more than {MAX_NESTING} deep;"
                    " remove some parentheses (or quote the text) and search again"
                )
            node = self.expr()
            if self.peek() != (")", None):
                raise _SyntaxProblem("unbalanced parentheses")
            self.take()
            self.depth -= 1
            return node
        if kind == "term" and isinstance(value, Term):
            return value
        raise _SyntaxProblem(f"unexpected {kind!r}")


def _split_words(terms: list[Term]) -> list[Term]:
    """For ranked OR: punctuation-joined words count separately, and quoted phrases mixed
    with bare words also contribute their words (a query of phrases only stays strict)."""
    expand_phrases = any(not t.quoted for t in terms)
    out: list[Term] = []
    for term in terms:
        if len(term.tokens) == 1 or term.is_cjk:
            out.append(term)
            continue
        if term.quoted:
            out.append(term)
            if expand_phrases:
                out.extend(Term((t,), t) for t in term.tokens if t not in STOPWORDS)
            continue
        last = len(term.tokens) - 1
        out.extend(
            Term((tok,), tok, prefix=term.prefix and i == last) for i, tok in enumerate(term.tokens)
        )
    return out


def _plain_query(raw: str, terms: list[Term], combine: str, warnings: Sequence[str]) -> ParsedQuery:
    if combine == "any":  # ranked OR: punctuation-joined words count separately
        terms = _split_words(terms)
    seen: set[tuple[tuple[str, ...], bool]] = set()
    unique = []
    for term in terms:
        key = (term.tokens, term.prefix)
        if key not in seen:
            seen.add(key)
            unique.append(term)
    kept = [t for t in unique if t.quoted or t.prefix or any(w not in STOPWORDS for w in t.tokens)]
    chosen = kept or unique
    root: Node | None
    if not chosen:
        root = None
    elif len(chosen) == 1:
        root = chosen[0]
    else:
        root = Or(tuple(chosen)) if combine == "any" else And(tuple(chosen))
    return ParsedQuery(raw, root, tuple(chosen), False, tuple(warnings))


def parse_query(query: str, *, combine: str = "any") -> ParsedQuery:
    """Parse user text into a :class:`ParsedQuery`.

    Odd input never raises: syntax the grammar does not accept falls back to the plain
    terms with a warning, and text that is not valid Unicode (lone surrogates) has those
    code points replaced by U+FFFD. The one refusal: parentheses nested deeper than
    :data:`MAX_NESTING` raise :class:`QueryError` (a ``StoreError``) saying what to do.

    ``combine`` (``any``/``all``) applies to natural-language queries, i.e. those without
    explicit syntax; explicit expressions keep their own operators (adjacent terms AND).
    """
    warnings: list[str] = []
    query = valid_text(query or "")
    text = query
    if len(text) > MAX_QUERY_CHARS:
        text = text[:MAX_QUERY_CHARS]
        warnings.append(f"the query was truncated to {MAX_QUERY_CHARS} characters")
    tokens = _lex(text, warnings)
    all_terms = [v for k, v in tokens if k == "term" and isinstance(v, Term)]
    if not tokens:
        return ParsedQuery(query, None, (), False, tuple(warnings))
    parsed = _parse_tokens(query, tokens, all_terms, combine, warnings)
    if parsed.root is None:
        return parsed
    negated = set(iter_terms(parsed.root)) - set(iter_terms(parsed.root, negated=False))
    return replace(parsed, literals=literals_of([t for t in all_terms if t not in negated]))


def literal_node(literals: Sequence[str]) -> Node | None:
    """A word-index query every message containing all ``literals`` matches (each one's
    words as a phrase); ``None`` when a literal has no words (``??``)."""
    terms = []
    for literal in literals:
        tokens = tuple(t.casefold() for t in _WORD.findall(literal))
        if not tokens:
            return None
        terms.append(Term(tokens, literal))
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else And(tuple(terms))


def literals_of(terms: Sequence[Term]) -> tuple[str, ...]:
    """The punctuated text of ``terms`` worth matching literally.

    A lone term keeps all its punctuation (``what?``); in a longer query, sentence
    punctuation at the end of a term is dropped (``the support group?`` has none), so
    natural-language questions rank as before.
    """
    out: list[str] = []
    for term in terms:
        literal = term.literal if len(terms) == 1 else term.literal.rstrip(_SENTENCE_END)
        if literal and _PUNCT.search(literal) and literal.casefold() not in out:
            out.append(literal.casefold())
    return tuple(out)


def _parse_tokens(
    query: str, tokens: list[_Token], all_terms: list[Term], combine: str, warnings: list[str]
) -> ParsedQuery:
    parser = _Parser(tokens)
    try:
        root = parser.parse()
    except _SyntaxProblem as problem:
        warnings.append(f"query syntax not understood ({problem}); searched the plain terms")
        words = all_terms or [Term((str(v).casefold(),), str(v)) for k, v in tokens if k == "op"]
        return _plain_query(query, words, combine, warnings)
    if not parser.explicit:
        return _plain_query(query, all_terms, combine, warnings)
    positives = tuple(iter_terms(root, negated=False))
    return ParsedQuery(query, root, positives, True, tuple(warnings))


# ---------------------------------------------------------------------------- compilers


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _compile(node: Node, leaf: Callable[[Term], str]) -> str:
    if isinstance(node, Term):
        return leaf(node)
    if isinstance(node, Not):
        return _compile(node.child, leaf)
    if isinstance(node, Or):
        return "(" + " OR ".join(_compile(c, leaf) for c in node.children) + ")"
    positives = [c for c in node.children if not isinstance(c, Not)]
    negatives = [c for c in node.children if isinstance(c, Not)]
    out = "(" + " AND ".join(_compile(c, leaf) for c in positives) + ")"
    for neg in negatives:
        out = f"({out} NOT {_compile(neg, leaf)})"
    return out


def compile_fts5(node: Node) -> str:
    """Compile a tree into an FTS5 MATCH expression for the word (unicode61) index.

    Every term is quoted, so no user text is ever read as FTS5 syntax.
    """
    return _compile(node, lambda t: _quote(" ".join(t.tokens)) + ("*" if t.prefix else ""))


def compile_trigram(node: Node) -> str:
    """Compile a tree into an FTS5 MATCH expression for the trigram (substring) index."""
    return _compile(node, lambda t: _quote(t.text))


def compile_like(
    node: Node, column: str, *, operator: str = "LIKE", escape: str = "\\"
) -> tuple[str, list[str]]:
    """Compile a tree into a SQL boolean over ``column LIKE ?`` tests and its parameters.

    ``operator`` may be ``ILIKE`` for PostgreSQL. ``%``, ``_`` and the escape character
    in terms are escaped.
    """
    params: list[str] = []

    def leaf(term: Term) -> str:
        escaped = (
            term.text.replace(escape, escape * 2)
            .replace("%", escape + "%")
            .replace("_", escape + "_")
        )
        params.append(f"%{escaped}%")
        return f"{column} {operator} ? ESCAPE '{escape}'"

    def walk(n: Node) -> str:
        if isinstance(n, Term):
            return leaf(n)
        if isinstance(n, Not):
            return f"NOT ({walk(n.child)})"
        joiner = " OR " if isinstance(n, Or) else " AND "
        return "(" + joiner.join(walk(c) for c in n.children) + ")"

    return walk(node), params


def make_snippet(content: str, needles: Sequence[str], *, width: int = 120) -> str:
    """A ``>>>match<<<`` snippet of about ``width`` characters around the first needle."""
    lowered = content.casefold()
    for needle in needles:
        index = lowered.find(needle.casefold()) if needle else -1
        if index >= 0:
            start = max(0, index - width // 3)
            end = min(len(content), index + len(needle) + width // 2)
            body = (
                content[start:index]
                + ">>>"
                + content[index : index + len(needle)]
                + "<<<"
                + content[index + len(needle) : end]
            )
            return ("..." if start else "") + body + ("..." if end < len(content) else "")
    return content[:width] + ("..." if len(content) > width else "")
