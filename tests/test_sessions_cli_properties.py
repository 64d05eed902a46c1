"""Property tests over ``memoryport sessions``: arbitrary import files and option values
never raise out of the CLI, exit 0/1/2 with a message, and a refused import changes nothing.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryport.cli import main
from memoryport.storage.sessions.records import MessageRecord, SessionRecord
from memoryport.storage.sessions.sqlite import SQLiteSessionStore

_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _record(cls: type[Any]) -> st.SearchStrategy[dict[str, Any]]:
    names = [f for f in cls.__dataclass_fields__]
    return st.dictionaries(st.sampled_from(names), _json, max_size=len(names))


_line = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass")),
    _json.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"session": _record(SessionRecord)}).map(
        lambda v: json.dumps(v).encode()
    ),
    st.fixed_dictionaries({"message": _record(MessageRecord)}).map(
        lambda v: json.dumps(v).encode()
    ),
    st.fixed_dictionaries(
        {"session": _record(SessionRecord), "message": _record(MessageRecord)}
    ).map(lambda v: json.dumps(v).encode()),
)


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    """A home with two sessions; shared by the examples (a refused import changes nothing)."""
    path = Path(tempfile.mkdtemp(prefix="mp-prop-"))
    store = SQLiteSessionStore(path / "state.db")
    store.create_session("keep", source="cli", title="kept")
    store.append_messages("keep", [{"role": "user", "content": "hello there"}])
    store.create_session("s1", source="api")
    store.close()
    yield path


def _invoke(home: Path, *args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(main, ["sessions", *args, "--home", str(home)], input=input)


def _snapshot(home: Path) -> str:
    result = _invoke(home, "export")
    assert result.exit_code == 0, result.output
    return result.stdout


def _count(home: Path) -> int:
    result = _invoke(home, "list", "--all", "--all-sources", "--json")
    return int(json.loads(result.stdout)["count"])


def _clean_exit(result: Result) -> None:
    """Exit 0/1/2, never a traceback; a failure says something on one or more lines."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code in (0, 1, 2), result.exit_code
    assert "Traceback" not in result.output
    if result.exit_code:
        assert result.output.strip().startswith(("Error:", "Usage:")), result.output


@_SETTINGS
@given(lines=st.lists(_line, min_size=1, max_size=5), keep_header=st.booleans())
def test_arbitrary_import_files(home: Path, lines: list[bytes], keep_header: bool) -> None:
    before, count = _snapshot(home), _count(home)
    header = json.dumps(
        {"format": "memoryport.sessions", "version": 2, "sessions": 0, "messages": 0}
    )
    data = b"\n".join([header.encode()] * keep_header + lines)
    result = _invoke(home, "import", "-", "--on-conflict", "error", input=data)
    _clean_exit(result)
    after = _snapshot(home)
    if result.exit_code:
        assert "nothing was imported" in result.output or "Usage:" in result.output
        assert after == before
    else:  # acknowledged == stored
        imported = int(result.output.split("imported ")[1].split()[0])
        assert _count(home) == count + imported
        if imported == 0:
            assert after == before


_option_value = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(["1d", "0", "30m", "2w", "-1d", "1e9", "nan", "inf", " 3 h", "99999999w"]),
)


@_SETTINGS
@given(
    command=st.sampled_from(
        [
            ("list", "--limit"),
            ("search", "hello", "--limit"),
            ("prune", "--dry-run", "--older-than"),
            ("forget", "--yes", "--message"),
            ("show",),
            ("search",),
        ]
    ),
    value=_option_value,
)
def test_arbitrary_option_values(home: Path, command: tuple[str, ...], value: str) -> None:
    before = _snapshot(home)
    if command[0] == "forget" and value.lstrip("+").isdigit():
        value = str(-abs(int(value)) - 1)  # never really delete: keep the store for the next case
    result = _invoke(home, *command, value)
    _clean_exit(result)
    if result.exit_code:
        assert _snapshot(home) == before
