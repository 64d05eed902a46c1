"""Running ByteRover's ``brv`` CLI as a subprocess with a timeout.

Every run is ``brv <command> ... --format json`` in the user's project directory (where
``brv`` keeps its ``.brv/context-tree``). The CLI prints one JSON object per line,
``{"command", "data", "success", "timestamp"}``; the last such line is the answer. A run
that times out is killed; a missing executable, a non-zero exit, ``success: false`` or
output without a JSON answer is one :class:`BackendError` naming ``byterover`` (the cloud
key, passed in the environment, never appears in it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from memoryport.storage.jsonl_outbox import BackendError

__all__ = ["BrvCli"]


class BrvCli:
    """One ``brv`` executable, run in ``cwd`` with an optional ``BRV_API_KEY``."""

    def __init__(self, executable: str, api_key: str = "") -> None:
        self.executable = executable
        self._key = api_key

    def resolve(self) -> str | None:
        """The executable's path, or None when it is not installed (no subprocess)."""
        return shutil.which(self.executable)

    def run(self, cwd: Path, args: list[str], *, timeout_s: float) -> dict[str, Any]:
        """Run ``brv *args --format json`` in ``cwd``; return the answer's ``data``."""
        path = self.resolve()
        what = f"brv {args[0]}"
        if path is None:
            raise self._error(f"cannot run {self.executable!r}: not found (install it with"
                              " npm install -g byterover-cli, or set byterover.brv_path)",
                              True)
        env = dict(os.environ, NO_UPDATE_NOTIFIER="1", CI="1")
        if self._key:
            env["BRV_API_KEY"] = self._key
        cwd.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run([path, *args, "--format", "json"], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise self._error(f"{what} did not finish in {timeout_s:g}s (killed)",
                              True) from None
        except OSError as exc:
            raise self._error(f"cannot run {what} ({type(exc).__name__})", True) from None
        answer = self._answer(done.stdout)
        if answer is None:
            detail = self._clean(done.stderr or done.stdout)[:200].strip()
            raise self._error(f"{what} exited {done.returncode} without a JSON answer"
                              + (f": {detail}" if detail else ""), True)
        raw = answer.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if not answer.get("success") or done.returncode != 0:
            message = self._clean(str(data.get("error") or data.get("message") or "failed"))
            raise self._error(f"{what} failed: {message[:200]}", True)
        return data

    @staticmethod
    def _answer(stdout: str) -> dict[str, Any] | None:
        for line in reversed((stdout or "").splitlines()):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and "command" in value:
                return value
        return None

    def _clean(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    @staticmethod
    def _error(text: str, retryable: bool) -> BackendError:
        return BackendError(f"byterover: {text}", provider="byterover", retryable=retryable)
