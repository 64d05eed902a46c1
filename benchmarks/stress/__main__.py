"""``python -m benchmarks.stress``: run every stress scenario (see run_all.py)."""

from __future__ import annotations

import sys

from benchmarks.stress.run_all import main

sys.exit(main())
