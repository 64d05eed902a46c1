"""Close open ``Memory`` objects at interpreter exit and on SIGTERM (chaining any handler)."""

from __future__ import annotations

import atexit
import signal
import threading
import weakref
from types import FrameType
from typing import Any, Protocol

__all__ = ["close_at_exit"]


class Closable(Protocol):
    """Anything with an idempotent ``close()`` (a ``Memory``)."""

    def close(self) -> None:
        """Close it (idempotent)."""


_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()
_previous_sigterm: Any = None


def _close_ref(ref: weakref.ref[Any]) -> None:
    obj = ref()
    if obj is not None:
        obj.close()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    for obj in list(_OPEN):
        obj.close()
    previous = _previous_sigterm
    if callable(previous):
        previous(signum, frame)
    else:
        raise SystemExit(128 + signum)


def close_at_exit(obj: Closable) -> None:
    """Close ``obj`` at interpreter exit and on SIGTERM (the handler is installed from the
    main thread only, once; a previous handler is chained). ``obj`` is held weakly."""
    global _previous_sigterm
    atexit.register(_close_ref, weakref.ref(obj))
    _OPEN.add(obj)
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current is _on_sigterm:
        return
    _previous_sigterm = current if current not in (signal.SIG_DFL, signal.SIG_IGN) else None
    signal.signal(signal.SIGTERM, _on_sigterm)
