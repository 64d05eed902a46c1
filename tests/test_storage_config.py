"""``storage.backend``/``storage.dsn`` and their deprecated spelling ``sessions.*``."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from memoryport.cli import main
from memoryport.config import (
    Config,
    ConfigError,
    ConfigWarning,
    StorageSettings,
    load_config,
    save_config,
    set_value,
)


def _write(home: Path, data: object) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(data))


def test_storage_block_selects_the_backend(tmp_path: Path) -> None:
    _write(tmp_path, {"storage": {"backend": "postgres", "dsn": "postgresql://db/x"}})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        config = load_config(tmp_path)
    assert config.storage == StorageSettings("postgres", "postgresql://db/x")
    assert (config.sessions.backend, config.sessions.dsn) == ("postgres", "postgresql://db/x")


def test_old_sessions_keys_are_read_with_a_deprecation_note(tmp_path: Path) -> None:
    _write(tmp_path, {"sessions": {"backend": "postgres", "dsn": "postgresql://db/old"}})
    with pytest.warns(ConfigWarning) as record:
        config = load_config(tmp_path)
    notes = " ".join(str(w.message) for w in record)
    assert "'sessions.backend' is deprecated" in notes and "storage.backend" in notes
    assert config.storage == StorageSettings("postgres", "postgresql://db/old")


def test_storage_wins_over_the_old_key(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {"sessions": {"backend": "postgres"}, "storage": {"backend": "sqlite"}},
    )
    with pytest.warns(ConfigWarning, match="ignored"):
        config = load_config(tmp_path)
    assert config.storage.backend == config.sessions.backend == "sqlite"


def test_setting_the_old_key_moves_it_to_storage(tmp_path: Path) -> None:
    _write(tmp_path, {"sessions": {"backend": "postgres", "hidden_sources": ["tool"]}})
    with pytest.warns(ConfigWarning, match="stored as 'storage.dsn'"):
        set_value(tmp_path, "sessions.dsn", "postgresql://db/x")
    set_value(tmp_path, "storage.backend", "postgres")
    raw = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert raw["sessions"] == {"hidden_sources": ["tool"]}
    assert raw["storage"] == {"dsn": "postgresql://db/x", "backend": "postgres"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        assert load_config(tmp_path).sessions.dsn == "postgresql://db/x"


def test_bad_backend_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    set_value(tmp_path, "storage.backend", "sqlite")
    before = (tmp_path / "config.yaml").read_bytes()
    with pytest.raises(ConfigError, match=r"storage\.backend: 'mysql' is not one of sqlite"):
        set_value(tmp_path, "storage.backend", "mysql")
    assert (tmp_path / "config.yaml").read_bytes() == before


def test_a_full_config_round_trips_without_the_old_keys(tmp_path: Path) -> None:
    config = Config(storage=StorageSettings("postgres", "postgresql://db/x"))
    saved = save_config(tmp_path, config)
    raw = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert "backend" not in raw["sessions"] and raw["storage"]["backend"] == "postgres"
    assert load_config(tmp_path) == saved
    assert saved.sessions.backend == "postgres"


def test_cli_masks_the_storage_dsn_password(tmp_path: Path) -> None:
    dsn = "postgresql://me:hunter2@db.example/x"
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(tmp_path), "config", "set", "storage.dsn", dsn])
    assert result.exit_code == 0, result.output
    for args in (["config", "get", "storage.dsn"], ["config", "show", "--json"]):
        shown = runner.invoke(main, ["--home", str(tmp_path), *args])
        assert "hunter2" not in shown.output and "***" in shown.output
    assert load_config(tmp_path).storage.dsn == dsn
