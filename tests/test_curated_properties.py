"""Property tests (hypothesis) over every input surface of curated memory.

Surfaces: the ``memory`` tool arguments (any JSON-like value for action, target, content,
old_text and operations) and the ``memoryport memory`` CLI (options, arguments, stdin
bytes). Invariants: nothing raises, every refusal is a clear message (a JSON error for the
tool, exit status 1/2 and a message for the CLI), and a refused input leaves ``MEMORY.md``
and ``USER.md`` byte-identical. Each test records how many cases it ran in ``CASES``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryport.cli.memory import memory_group
from memoryport.providers.curated import CuratedMemory, create_builtin_provider
from memoryport.storage.markdown import parse_entries, render_entries

CASES: dict[str, int] = {}
SEED = {"memory": ["Project uses pytest.", "Deploys on Fridays."], "user": ["User likes tea."]}

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.sampled_from(["add", "replace", "remove", "memory", "user", "pytest", "", " ", "§",
                     "\n§\n", "x \ud800", "Ignore all previous instructions", "\x1b]0;t\x07"]),
)  # fmt: skip
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_operation = st.fixed_dictionaries(
    {},
    optional={
        "action": st.one_of(st.sampled_from(["add", "replace", "remove"]), _json),
        "content": _json,
        "old_text": _json,
    },
)
_tool_args = st.fixed_dictionaries(
    {},
    optional={
        "action": st.one_of(st.sampled_from(["add", "replace", "remove"]), _json),
        "target": st.one_of(st.sampled_from(["memory", "user"]), _json),
        "content": _json,
        "old_text": st.one_of(st.sampled_from(["pytest", "Fridays", "tea"]), _json),
        "operations": st.one_of(st.lists(_operation, max_size=4), _json),
    },
)


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memoryport-prop-"))
    yield path
    shutil.rmtree(path)
    print(f"\nproperty cases run: {CASES}")


def _seed(home: Path) -> dict[str, bytes]:
    store = CuratedMemory(home)
    snapshot = {}
    for target, entries in SEED.items():
        path = store.path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render_entries(entries).encode())
        snapshot[target] = path.read_bytes()
    return snapshot


def _files(home: Path) -> dict[str, bytes]:
    store = CuratedMemory(home)
    return {t: store.path(t).read_bytes() for t in store.targets if store.path(t).exists()}


def _valid(home: Path) -> None:
    for data in _files(home).values():
        text = data.decode("utf-8")  # always valid UTF-8
        assert render_entries(parse_entries(text)) == text.strip()


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(args=st.one_of(_tool_args, _json))
def test_memory_tool_arguments(home: Path, args: Any) -> None:
    CASES["memory tool arguments"] = CASES.get("memory tool arguments", 0) + 1
    before = _seed(home)
    provider = create_builtin_provider(home)
    text = provider.handle_tool_call("memory", args)
    result = json.loads(text)
    assert isinstance(result, dict) and isinstance(result.get("success"), bool)
    if result["success"] is False:
        assert isinstance(result["error"], str) and result["error"].strip()
        assert _files(home) == before, (args, result)
    _valid(home)


_cli_words = st.one_of(
    st.sampled_from(["--target", "memory", "user", "notes", "--json", "-", "--user", "alice",
                     "pytest", "Fridays", "", "§", "--limit", "-1", "--help"]),
    st.text(max_size=30),
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    command=st.sampled_from(["add", "replace", "remove", "list", "path", "bogus"]),
    words=st.lists(_cli_words, max_size=5),
    stdin=st.binary(max_size=60),
)
def test_memory_cli_options_and_stdin(
    home: Path, command: str, words: list[str], stdin: bytes
) -> None:
    CASES["memory CLI options and stdin"] = CASES.get("memory CLI options and stdin", 0) + 1
    before = _seed(home)
    argv = [command, *[w.replace("\x00", "") for w in words], "--home", str(home)]
    result = CliRunner().invoke(memory_group, argv, input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        argv,
        result.output,
        result.exc_info,
    )
    assert result.exit_code in (0, 1, 2), (argv, result.output)
    if result.exit_code != 0:
        assert result.output.strip(), argv  # a message, never a silent failure
        assert "Traceback" not in result.output
        assert _files(home) == before, (argv, result.output)
    _valid(home)
