"""Close open ``Memory`` objects at interpreter exit, and on SIGTERM when asked to.

``close_at_exit`` registers an ``atexit`` close (not a signal handler). A library must not
take over process signals by default, so the SIGTERM handler is opt-in:
``close_on_sigterm`` (``memoryport.open(handle_sigterm=True)``, used by ``memoryport chat``
and the reference agent) installs it once, from the main thread, chaining any previous
handler.
"""

from __future__ import annotations

import atexit
import signal
import threading
import weakref
from types import FrameType
from typing import Any, Protocol

__all__ = ["close_at_exit", "close_on_sigterm"]


class Closable(Protocol):
    """Anything with an idempotent ``close()`` (a ``Memory``)."""

    def close(self) -> None:
        """Close it (idempotent)."""


_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()
_previous_sigterm: Any = None
_install_lock = threading.Lock()


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
    """Close ``obj`` at interpreter exit (``atexit``; no signal handler). Held weakly."""
    atexit.register(_close_ref, weakref.ref(obj))


def close_on_sigterm(obj: Closable) -> bool:
    """Close ``obj`` (and every other object registered here) on SIGTERM, then run the
    previous handler, or exit with status 143 when there was none.

    The handler is installed once and only from the main thread (Python allows signal
    handlers nowhere else); returns False when it could not be installed from here, in
    which case ``obj`` is still closed at exit. ``obj`` is held weakly.
    """
    global _previous_sigterm
    _OPEN.add(obj)
    if threading.current_thread() is not threading.main_thread():
        return signal.getsignal(signal.SIGTERM) is _on_sigterm
    with _install_lock:
        current = signal.getsignal(signal.SIGTERM)
        if current is not _on_sigterm:
            keep = current not in (signal.SIG_DFL, signal.SIG_IGN, None)
            _previous_sigterm = current if keep else None
            signal.signal(signal.SIGTERM, _on_sigterm)
    return True
