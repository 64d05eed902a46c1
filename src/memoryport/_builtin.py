"""Old private path of the built-in identity marker; use ``memoryport.provider`` instead.

``mark_builtin``/``is_builtin`` now live in the provider contract module. This re-export
stays only until every bundled provider imports them from there.
"""

from __future__ import annotations

from memoryport.provider import is_builtin, mark_builtin

__all__ = ["is_builtin", "mark_builtin"]
