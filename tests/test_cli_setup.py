"""`memoryport setup`: picker, pip dependencies, schema prompts, --set/--yes, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from fixtures.helpers import install_plugin, isolate
from memoryport.cli import main
from memoryport.cli import setup as setup_cli
from memoryport.config import load_config, read_env


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = isolate(tmp_path, monkeypatch)
    monkeypatch.delenv("HERMES_STYLE_API_KEY", raising=False)
    return home


@pytest.fixture
def pip_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record pip invocations instead of touching the environment."""
    calls: list[list[str]] = []

    def fake(requirements: list[str]) -> int:
        calls.append(requirements)
        return 0

    monkeypatch.setattr(setup_cli, "run_pip", fake)
    return calls


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input)


def test_scripted_setup_writes_config_env_and_native_config(
    home: Path, pip_calls: list[list[str]]
) -> None:
    install_plugin(home, "hermes_style")
    result = invoke("setup", "hermes_style", "--set", "api_key=sk-123", "--set", "top_k=5", "--yes")
    assert result.exit_code == 0, result.output
    assert "sk-123" not in result.output
    assert "HERMES_STYLE_API_KEY" in result.output
    config = load_config(home)
    assert config.memory.provider == "hermes_style"
    assert config.providers["hermes_style"] == {"region": "us-east", "top_k": 5}
    assert read_env(home) == {"HERMES_STYLE_API_KEY": "sk-123"}
    assert json.loads((home / "hermes_style.json").read_text()) == {
        "region": "us-east",
        "top_k": 5,
    }
    assert "api_key" not in (home / "config.yaml").read_text()
    assert pip_calls == []  # pyyaml is installed already


def test_interactive_setup_with_picker(home: Path, pip_calls: list[list[str]]) -> None:
    install_plugin(home, "hermes_style")
    names = list(json.loads(invoke("providers", "list", "--json").output)["providers"])
    index = [p["name"] for p in names].index("hermes_style") + 1
    answers = f"{index}\nsecret-key\neu-west\n7\n"
    result = invoke("setup", input=answers)
    assert result.exit_code == 0, result.output
    assert "0. Built-in only" in result.output
    assert "get it at https://example.invalid/keys" in result.output
    assert "secret-key" not in result.output  # hidden input
    config = load_config(home)
    assert config.providers["hermes_style"] == {"region": "eu-west", "top_k": 7}
    assert read_env(home)["HERMES_STYLE_API_KEY"] == "secret-key"


def test_builtin_only(home: Path) -> None:
    (home).mkdir(parents=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"provider": "x"}}))
    result = invoke("setup", "builtin")
    assert result.exit_code == 0
    assert load_config(home).memory.provider == ""
    assert invoke("setup", input="0\n").exit_code == 0


def test_validation_reports_every_problem(home: Path, pip_calls: list[list[str]]) -> None:
    install_plugin(home, "hermes_style")
    result = invoke("setup", "hermes_style", "--set", "region=mars", "--set", "top_k=0", "--yes")
    assert result.exit_code == 1
    assert "api_key: required but missing" in result.output
    assert "region: 'mars' is not one of" in result.output
    assert "top_k: 0 is below the minimum 1" in result.output
    assert load_config(home).memory.provider == "holographic"  # nothing written: the default


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["setup", "ghost", "--yes"], "not installed"),
        (["setup", "--yes"], "name a PROVIDER"),
        (["setup", "hermes_style", "--set", "nokey", "--yes"], "KEY=VALUE"),
        (["setup", "hermes_style", "--set", "colour=red", "--yes"], "unknown setting(s) colour"),
        (["setup", "hermes_style", "--set", "top_k=many", "--yes"], "expected an integer"),
        (["setup", "broken", "--yes"], "exploded at import"),
    ],
)
def test_setup_errors(home: Path, pip_calls: list[list[str]], args: list[str], needle: str) -> None:
    install_plugin(home, "hermes_style")
    install_plugin(home, "broken")
    result = invoke(*args)
    assert result.exit_code in (1, 2)
    assert needle in result.output


def test_missing_pip_dependencies_are_installed_after_asking(
    home: Path, pip_calls: list[list[str]]
) -> None:
    target = install_plugin(home, "hermes_style")
    manifest = yaml.safe_load((target / "plugin.yaml").read_text())
    manifest["pip_dependencies"] = ["pyyaml", "memoryport-no-such-dist>=1"]
    (target / "plugin.yaml").write_text(yaml.safe_dump(manifest))
    declined = invoke("setup", "hermes_style", "--set", "api_key=k", input="n\n")
    assert "needs: memoryport-no-such-dist>=1" in declined.output
    assert pip_calls == []
    accepted = invoke("setup", "hermes_style", "--set", "api_key=k", "--yes")
    assert accepted.exit_code == 0, accepted.output
    assert pip_calls == [["memoryport-no-such-dist>=1"]]
    invoke("setup", "hermes_style", "--set", "api_key=k", "--yes", "--no-install")
    assert len(pip_calls) == 1


def test_pip_failure_is_an_error(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = install_plugin(home, "hermes_style")
    (target / "plugin.yaml").write_text("pip_dependencies: [memoryport-no-such-dist]\n")
    monkeypatch.setattr(setup_cli, "run_pip", lambda reqs: 1)
    result = invoke("setup", "hermes_style", "--yes")
    assert result.exit_code == 1
    assert "pip could not install memoryport-no-such-dist" in result.output


def test_external_dependency_hints(home: Path, pip_calls: list[list[str]]) -> None:
    target = install_plugin(home, "hermes_style")
    manifest = yaml.safe_load((target / "plugin.yaml").read_text())
    manifest["external_dependencies"] = [
        {"name": "present", "install": "no", "check": "true"},
        {"name": "absent-tool", "install": "brew install absent-tool", "check": "false"},
    ]
    (target / "plugin.yaml").write_text(yaml.safe_dump(manifest))
    result = invoke("setup", "hermes_style", "--set", "api_key=k", "--yes")
    assert "External dependency 'absent-tool' is needed." in result.output
    assert "Install it with: brew install absent-tool" in result.output
    assert "'present'" not in result.output


def test_post_setup_is_delegated_to(home: Path) -> None:
    target = home / "plugins" / "own_setup"
    target.mkdir(parents=True)
    (target / "plugin.yaml").write_text("name: own_setup\n")
    (target / "__init__.py").write_text(
        "from pathlib import Path\n"
        "from agent.memory_provider import MemoryProvider\n\n"
        "class P(MemoryProvider):\n"
        "    name = 'own_setup'\n"
        "    def is_available(self): return True\n"
        "    def initialize(self, session_id, **kw): pass\n"
        "    def get_tool_schemas(self): return []\n"
        "    def post_setup(self, hermes_home, config):\n"
        "        Path(hermes_home, 'own.txt').write_text(str(config['memory']['nudge_interval']))\n"
    )
    result = invoke("setup", "own_setup")
    assert result.exit_code == 0, result.output
    assert (home / "own.txt").read_text() == "10"
    assert load_config(home).memory.provider == "own_setup"


def test_manifest_config_used_when_provider_has_no_schema(
    home: Path, pip_calls: list[list[str]]
) -> None:
    target = install_plugin(home, "duck_typed", "yaml_schema")
    (target / "plugin.yaml").write_text(
        "name: yaml_schema\nconfig:\n"
        "  - key: MENTIS_URL\n    label: Daemon URL\n    default: http://localhost:9471\n"
        "  - key: MENTIS_TOKEN\n    label: Token\n    secret: true\n    env_var: MENTIS_TOKEN\n"
    )
    result = invoke("setup", "yaml_schema", "--set", "MENTIS_TOKEN=t0k", "--yes")
    assert result.exit_code == 0, result.output
    assert load_config(home).providers["yaml_schema"] == {"MENTIS_URL": "http://localhost:9471"}
    assert read_env(home) == {"MENTIS_TOKEN": "t0k"}
