import os

import matplotlib

matplotlib.use("Agg")  # tests draw figures without a display

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets an empty cache directory; shipped checkpoints stay visible."""
    monkeypatch.setenv("BWT_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path / "cache"


@pytest.fixture(autouse=True)
def close_figures():
    """Close every figure a test opened."""
    yield
    plt.close("all")


def drawn(fig) -> list:
    """What a figure shows, as data to compare: per axes, each line's (x, y) points, each image's array,
    each scatter's points and each patch's (bar, span) corners. Empty for a figure that draws nothing."""
    import numpy as np

    out = []
    for ax in fig.axes:
        out += [np.asarray(line.get_xydata()) for line in ax.lines]
        out += [np.asarray(im.get_array()) for im in ax.images]
        out += [np.asarray(c.get_offsets()) for c in ax.collections]
        out += [np.asarray(p.get_verts()) for p in ax.patches]
    return out


def same_drawing(a, b) -> bool:
    """Whether two figures draw the same data (:func:`drawn`), to float rounding."""
    import numpy as np

    da, db = drawn(a), drawn(b)
    return len(da) == len(db) and all(x.shape == y.shape and np.allclose(x, y, equal_nan=True) for x, y in zip(da, db))


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class Killed(Exception):
    """Raised by :func:`fit_until_killed` to stop a run as a kill would."""


def fit_until_killed(preset, at_step: int, ckpt_every: int = 4, **fit_kwargs):
    """Train ``preset`` into its cache directory, saving a state every ``ckpt_every`` steps, and die
    right after the state of step ``at_step`` is written; returns the directory."""
    from bwt_lite.store.cache import checkpoint_dir
    from bwt_lite.store.resume import save_train_state
    from bwt_lite.train import RunOptions, fit

    directory = checkpoint_dir(preset)

    def save_then_die(state):
        save_train_state(directory, state, preset)
        if state.step == at_step:
            raise Killed

    with pytest.raises(Killed):
        fit(preset.tunnel, preset.model, preset.train, on_checkpoint=save_then_die,
            run=RunOptions(progress=False, ckpt_every=ckpt_every, **fit_kwargs))
    return directory
