"""The turn index: completed turns with speaker and time, ranked with their context.

See :mod:`.index` (``TurnIndex``), :mod:`.rank` (how turns are scored) and
:mod:`.schema` (tables and migrations, namespace ``_turns_migrations``).
"""

from __future__ import annotations

from memoryport.storage.turns.index import MAX_LIMIT, TurnHit, TurnIndex, TurnInput
from memoryport.storage.turns.rank import Components, Weights

__all__ = ["MAX_LIMIT", "Components", "TurnHit", "TurnIndex", "TurnInput", "Weights"]
