"""config.py: home and profiles, config.yaml defaults/validation, get/set, .env."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from fixtures.helpers import isolate
from memoryport.config import (
    Config,
    ConfigWarning,
    MemorySettings,
    get_secret,
    get_value,
    load_config,
    load_env_into_environ,
    missing_env_vars,
    parse_env,
    read_env,
    resolve_home,
    save_config,
    set_value,
    validate_provider_config,
    write_env,
)
from memoryport.errors import ConfigError


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


# ----------------------------------------------------------------- home & profiles


def test_resolve_home_uses_env_then_default(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_home() == home
    monkeypatch.delenv("MEMORYPORT_HOME")
    assert resolve_home() == Path(os.environ["HOME"]) / ".memoryport"
    assert resolve_home("~/elsewhere") == Path(os.environ["HOME"]) / "elsewhere"


def test_profile_selects_profile_dir(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_home(profile="work") == home / "profiles" / "work"
    assert resolve_home(profile="default") == home
    monkeypatch.setenv("MEMORYPORT_PROFILE", "play")
    assert resolve_home() == home / "profiles" / "play"
    assert resolve_home(profile="work") == home / "profiles" / "work"


@pytest.mark.parametrize("bad", ["", "..", ".", "a/b", "../x", "a\\b", "-x", "x" * 65])
def test_profile_names_are_validated(bad: str) -> None:
    if bad == "":
        assert resolve_home(profile=bad) == resolve_home()
        return
    with pytest.raises(ConfigError, match="profile"):
        resolve_home(profile=bad)


def test_profiles_never_see_each_others_data(home: Path) -> None:
    work, play = resolve_home(profile="work"), resolve_home(profile="play")
    set_value(work, "memory.provider", "mem0")
    write_env(work, {"SECRET_KEY": "work-secret"})
    assert get_value(work, "memory.provider") == "mem0"
    assert get_value(play, "memory.provider") == "holographic"  # the default
    assert get_value(home, "memory.provider") == "holographic"
    assert read_env(play) == {}
    assert get_secret(play, "SECRET_KEY") is None
    assert not (home / "config.yaml").exists()


# ----------------------------------------------------------------- config.yaml


def test_defaults_when_no_file(home: Path) -> None:
    config = load_config(home)
    assert config.memory == MemorySettings()
    assert config.memory.memory_char_limit == 2200
    assert config.memory.user_char_limit == 1375
    assert config.memory.prefetch_deadline_s == 5.0
    assert config.memory.nudge_interval == 10
    assert config.sessions.backend == "sqlite"
    assert config.sessions.hidden_sources == ["tool", "subagent"]
    assert config.agent.api_key_env == "OPENAI_API_KEY"
    assert config.providers == {}


def _write(home: Path, data: object) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(data))


def test_reads_blocks_and_provider_sections(home: Path) -> None:
    _write(
        home,
        {
            "memory": {"provider": "mem0", "prefetch_deadline_s": 2, "nudge_interval": 0},
            "sessions": {"backend": "postgres", "dsn": "postgresql://x"},
            "mem0": {"region": "eu-west"},
        },
    )
    config = load_config(home)
    assert config.memory.provider == "mem0"
    assert config.memory.prefetch_deadline_s == 2.0
    assert isinstance(config.memory.prefetch_deadline_s, float)
    assert config.sessions.backend == "postgres"
    assert config.providers == {"mem0": {"region": "eu-west"}}


def test_unknown_keys_warn(home: Path) -> None:
    _write(home, {"memory": {"provder": "x"}, "stray": 3})
    with pytest.warns(ConfigWarning) as record:
        config = load_config(home)
    messages = " ".join(str(w.message) for w in record)
    assert "memory.provder" in messages
    assert "stray" in messages
    assert config.memory.provider == "holographic"  # the default


@pytest.mark.parametrize(
    ("data", "needles"),
    [
        (
            {"memory": {"memory_char_limit": "lots"}},
            ["memory.memory_char_limit", "'lots'", "integer"],
        ),
        ({"memory": {"memory_enabled": "yes"}}, ["memory.memory_enabled", "'yes'", "boolean"]),
        ({"memory": {"nudge_interval": True}}, ["memory.nudge_interval", "True", "integer"]),
        ({"sessions": {"backend": "mysql"}}, ["sessions.backend", "'mysql'", "sqlite, postgres"]),
        ({"sessions": {"hidden_sources": "tool"}}, ["sessions.hidden_sources", "list of strings"]),
        ({"memory": {"user_char_limit": 0}}, ["memory.user_char_limit", "0", "from 1 to 1000000"]),
        ({"memory": ["not", "a", "mapping"]}, ["memory", "mapping"]),
    ],
)
def test_wrong_types_name_key_value_and_expectation(
    home: Path, data: object, needles: list[str]
) -> None:
    _write(home, data)
    with pytest.raises(ConfigError) as info:
        load_config(home)
    for needle in needles:
        assert needle in str(info.value)


def test_invalid_yaml_is_a_config_error(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("memory: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(home)


def test_hermes_style_memory_subsections_are_kept(home: Path) -> None:
    _write(home, {"memory": {"provider": "verbatim", "verbatim": {"capture": {"enabled": True}}}})
    config = load_config(home)
    assert config.hermes_sections == {"verbatim": {"capture": {"enabled": True}}}
    assert config.provider_section("verbatim") == {"capture": {"enabled": True}}
    save_config(home, {"memory": {"nudge_interval": 3}})
    raw = yaml.safe_load((home / "config.yaml").read_text())
    assert raw["memory"]["verbatim"] == {"capture": {"enabled": True}}
    assert raw["memory"]["nudge_interval"] == 3


def test_save_config_merges_and_validates_before_writing(home: Path) -> None:
    save_config(home, {"memory": {"provider": "a"}, "a": {"k": 1}})
    save_config(home, {"a": {"j": 2}})
    config = load_config(home)
    assert config.memory.provider == "a"
    assert config.providers["a"] == {"k": 1, "j": 2}
    before = (home / "config.yaml").read_text()
    with pytest.raises(ConfigError):
        save_config(home, {"memory": {"nudge_interval": "often"}})
    assert (home / "config.yaml").read_text() == before


def test_save_full_config_round_trips(home: Path) -> None:
    config = Config(
        memory=MemorySettings(provider="x", nudge_interval=4), providers={"x": {"a": 1}}
    )
    assert save_config(home, config) == config
    assert load_config(home) == config


def test_set_value_coerces_strings(home: Path) -> None:
    set_value(home, "memory.memory_enabled", "false")
    set_value(home, "memory.memory_char_limit", "3000")
    set_value(home, "memory.prefetch_deadline_s", "1.5")
    set_value(home, "sessions.hidden_sources", "tool, cron")
    set_value(home, "mem0.top_k", "7")
    set_value(home, "mem0.label", "hello world")
    assert get_value(home, "memory.memory_enabled") is False
    assert get_value(home, "memory.memory_char_limit") == 3000
    assert get_value(home, "memory.prefetch_deadline_s") == 1.5
    assert get_value(home, "sessions.hidden_sources") == ["tool", "cron"]
    assert get_value(home, "mem0.top_k") == 7
    assert get_value(home, "mem0.label") == "hello world"


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("memory.memory_char_limit", "many", "expected an integer"),
        ("memory.memory_enabled", "maybe", "expected a boolean"),
        ("memory.nope", "1", "unknown setting"),
        ("provider", "x", "SECTION.KEY"),
        ("evil/dir.key", "x", "not valid"),
    ],
)
def test_set_value_errors(home: Path, key: str, value: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        set_value(home, key, value)


def test_get_value_errors(home: Path) -> None:
    with pytest.raises(ConfigError, match="unknown setting"):
        get_value(home, "memory.nope")
    with pytest.raises(ConfigError, match="not set"):
        get_value(home, "mem0.region")


# ----------------------------------------------------------------- .env


def test_env_file_is_0600_and_keeps_comments(home: Path) -> None:
    home.mkdir(parents=True)
    (home / ".env").write_text("# my keys\nKEEP=1\n")
    (home / ".env").chmod(0o644)
    path = write_env(home, {"API_KEY": "s3cr3t value", "KEEP": None, "OTHER": "x"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert text.startswith("# my keys\n")
    assert "KEEP" not in text
    assert read_env(home) == {"API_KEY": "s3cr3t value", "OTHER": "x"}


def test_new_env_file_is_0600(home: Path) -> None:
    path = write_env(home, {"K": "v"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_parse_env_tolerates_comments_quotes_and_export() -> None:
    text = """
# comment
export A=1
B = "two words" # trailing
C='single # not a comment'
D=plain # trailing comment
E="esc\\"aped\\nline"
not a line
F=
"""
    assert parse_env(text) == {
        "A": "1",
        "B": "two words",
        "C": "single # not a comment",
        "D": "plain",
        "E": 'esc"aped\nline',
        "F": "",
    }


def test_environment_overrides_env_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_env(home, {"MP_TEST_KEY": "from-file"})
    assert get_secret(home, "MP_TEST_KEY") == "from-file"
    monkeypatch.setenv("MP_TEST_KEY", "from-env")
    assert get_secret(home, "MP_TEST_KEY") == "from-env"
    assert load_env_into_environ(home) == []
    assert os.environ["MP_TEST_KEY"] == "from-env"


def test_load_env_into_environ(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MP_FRESH", "placeholder")
    monkeypatch.delenv("MP_FRESH")
    write_env(home, {"MP_FRESH": "v"})
    assert load_env_into_environ(home) == ["MP_FRESH"]
    assert os.environ["MP_FRESH"] == "v"


# ----------------------------------------------------------------- provider config

SCHEMA = [
    {"key": "api_key", "secret": True, "required": True, "env_var": "MP_DEMO_KEY"},
    {"key": "region", "choices": ["us", "eu"], "default": "us"},
    {"key": "top_k", "type": "integer", "minimum": 1},
]


def test_provider_config_reports_every_problem(home: Path) -> None:
    save_config(home, {"demo": {"region": "mars", "top_k": 0, "colour": "red"}})
    problems = validate_provider_config("demo", SCHEMA, load_config(home), home)
    text = "\n".join(problems)
    assert "api_key: required but missing" in text
    assert "region: 'mars' is not one of" in text
    assert "top_k: 0 is below the minimum 1" in text
    assert "colour: unknown setting" in text
    assert missing_env_vars("demo", SCHEMA, load_config(home), home) == ["MP_DEMO_KEY"]


def test_provider_secret_from_env_file_counts(home: Path) -> None:
    save_config(home, {"demo": {"region": "eu"}})
    write_env(home, {"MP_DEMO_KEY": "k"})
    assert validate_provider_config("demo", SCHEMA, load_config(home), home) == []
    assert missing_env_vars("demo", SCHEMA, load_config(home), home) == []
