"""One call at the top of every chapter: device, seeds, cache directory (Google Drive when mounted),
the book's figure style and static views of widgets."""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch

from .display import enable_static_widgets, set_figure_style
from .cli.cache import check_cache_dir
from .runtime.device import resolve_device
from .version import __version__


@dataclass
class NotebookSetup:
    device: str  # "cuda" when a GPU is visible, else "cpu"
    seed: int
    cache_dir: Path  # where checkpoints are cached (see bwt_lite.store.cache.cache_dir)


def setup_notebook(seed: int = 0, device: str | None = None, verbose: bool = True) -> NotebookSetup:
    """Pick the device, seed python/numpy/torch, choose the checkpoint cache directory, and set the
    book-wide display: figures as wide as the book's column in retina PNG with readable fonts
    (:func:`bwt_lite.display.set_figure_style`), and a static view of every interactive widget for
    pages without a kernel (:func:`bwt_lite.display.enable_static_widgets`).

    The cache is ``$BWT_CACHE_DIR`` if set; else, on Colab with Google Drive mounted,
    ``MyDrive/bwt_cache`` (so trained models survive the session); else the user cache directory. It is
    checked as ``bwt train`` checks it (a writable directory, created if missing). Every argument is
    checked before anything is seeded: ``seed`` an integer in 0..2**32-1, ``device`` None (the GPU when
    one is visible), ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` of a visible GPU.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:
        raise ValueError(f"seed must be an integer in 0..2**32-1 (numpy's range), got {seed!r}")
    if device is not None and not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'cuda', or None, got {type(device).__name__}")
    device = str(resolve_device("auto" if device is None else device))
    cache = check_cache_dir()
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:  # numpy is optional for the package itself
        pass
    set_figure_style()
    enable_static_widgets()
    setup = NotebookSetup(device=device, seed=seed, cache_dir=cache)
    if verbose:
        print(f"bwt_lite {__version__} | device: {device} | seed: {seed}")
    return setup
