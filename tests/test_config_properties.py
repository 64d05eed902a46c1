"""Property tests over configuration input: `config set` values, config.yaml and .env bytes.

Whatever the input: no traceback, exit 0 or a clear ``Error:`` with exit 1, and
``config.yaml`` unchanged after a refused ``config set``. Run with
``--hypothesis-show-statistics`` to see how many cases each surface ran.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryport.cli import main
from memoryport.config import ConfigError, ConfigWarning, block_fields, load_config, read_env


def cases(count: int) -> settings:
    """Settings of one surface: ``count`` cases, no deadline, no example database."""
    return settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


# Every known key, a provider field, a secret-looking provider field and odd keys.
KNOWN_KEYS = [f"{block}.{key}" for block, keys in block_fields().items() for key in keys]
KEYS = st.one_of(
    st.sampled_from([*KNOWN_KEYS, "mem0.top_k", "mem0.api_key", "memory.mem0"]),
    st.text(max_size=30),
)
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=60)
NUMBERISH = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "1e999", "-0", "0x10", "1_000", " 7 ", "-1", ""]),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
VALUES = st.one_of(ANY_TEXT, NUMBERISH)


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--home", str(home), *args])


def assert_clean(result: Result) -> None:
    """Exit 0, or exit 1 with one ``Error:`` message; never an uncaught exception."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 1:
        assert result.stderr.startswith("Error: ") or "Error: " in result.stderr


@cases(200)
@given(key=KEYS, value=VALUES)
def test_config_set_any_value_is_stored_or_refused_cleanly(key: str, value: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        assert run(home, "config", "set", "memory.nudge_interval", "4").exit_code == 0
        before = (home / "config.yaml").read_bytes()
        result = run(home, "config", "set", key, value)
        assert_clean(result)
        if result.exit_code == 1:
            assert (home / "config.yaml").read_bytes() == before
            assert sorted(p.name for p in home.iterdir()) == ["config.yaml"]
        else:
            load_config(home)  # what was stored loads again
            assert_clean(run(home, "config", "show"))
            assert_clean(run(home, "config", "get", key))


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
SECTION_KEYS = st.one_of(
    st.sampled_from([k.split(".")[1] for k in KNOWN_KEYS]), st.text(max_size=10)
)
NESTED = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SECTION_KEYS, inner, max_size=4),
    max_leaves=12,
)
CONFIG_DOCS = st.dictionaries(
    st.sampled_from(["memory", "sessions", "agent", "mem0", "x"]) | st.text(max_size=8),
    NESTED,
    max_size=5,
)


def _yaml_text(doc: Any) -> bytes:
    return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")


CONFIG_BYTES = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    CONFIG_DOCS.map(_yaml_text),
)


@cases(200)
@given(content=CONFIG_BYTES)
def test_any_config_yaml_loads_or_gives_a_config_error(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "config.yaml").write_bytes(content)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConfigWarning)
                load_config(home)
        except ConfigError as exc:
            assert "config.yaml" in str(exc)
        assert_clean(run(home, "config", "show"))
        assert_clean(run(home, "config", "get", "memory.provider"))
        result = run(home, "config", "set", "memory.nudge_interval", "3")
        assert_clean(result)
        if result.exit_code == 1:
            assert (home / "config.yaml").read_bytes() == content


ENV_BYTES = st.one_of(
    st.binary(max_size=200),
    st.lists(
        st.tuples(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), ANY_TEXT),
        max_size=5,
    ).map(lambda pairs: "\n".join(f"{k}={v}" for k, v in pairs).encode("utf-8", "surrogatepass")),
)


@cases(200)
@given(content=ENV_BYTES)
def test_any_dotenv_is_read_or_reported(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / ".env").write_bytes(content)
        (home / ".env").chmod(0o600)
        try:
            read_env(home)
            broken = False
        except ConfigError as exc:
            assert ".env" in str(exc)
            broken = True
        result = run(home, "config", "path")
        assert_clean(result)
        assert result.exit_code == 0  # every command still runs
        assert ("warning:" in result.stderr) == broken
        assert_clean(run(home, "status", "--no-probe"))
