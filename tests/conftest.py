import os

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets an empty cache directory; shipped checkpoints stay visible."""
    monkeypatch.setenv("BWT_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path / "cache"


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


os.environ.setdefault("HF_HUB_OFFLINE", "1")
