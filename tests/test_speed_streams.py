"""The HMM and bijection samplers' speed-ups draw the same episodes, bit for bit.

The samplers are tuned for ``bwt bench``'s CPU goals (:func:`bwt_lite.orchestration.goals.cpu_ratios`);
every such change must leave the random streams alone. For a few configurations (variants, ``sharpen``,
S != O, long and short episodes), seeds and batch sizes, two consecutive batches from one generator
are hashed: the exact bytes of the tokens, targets and float64 posteriors (``probs``, compared bit for
bit here, unlike the weighted sums of ``test_tunnel_streams.py``) and the generator state afterwards
(so each call consumes the same random numbers). The digests were recorded with the samplers as they
were before the speed-ups. ``python tests/test_speed_streams.py`` prints the table.

Also: the bijection sampler's ranking of random rows (``_ranked_permutations``) against ``argsort``,
ties included, also a few rows at a time.
"""
from __future__ import annotations

import hashlib

import pytest
import torch

from bwt_lite.tunnels import bijection, make_tunnel
from bwt_lite.tunnels.bijection import _ranked_permutations

CASES: dict[str, dict] = {
    "hmm": {"tunnel": "hmm"},
    "hmm-slow": {"tunnel": "hmm", "variant": "slow", "S": 3, "K": 30},
    "hmm-sharpen": {"tunnel": "hmm", "sharpen": 6.0},
    "hmm-s3-o5": {"tunnel": "hmm", "S": 3, "O": 5, "K": 50},
    "hmm-s10-o12": {"tunnel": "hmm", "S": 10, "O": 12, "K": 40},
    "hmm-k1": {"tunnel": "hmm", "K": 1},
    "hmm-k70": {"tunnel": "hmm", "K": 70},
    "bijection": {"tunnel": "bijection"},
    "bijection-paired": {"tunnel": "bijection", "variant": "paired"},
    "bijection-replacement": {"tunnel": "bijection", "variant": "replacement", "L": 30},
    "bijection-short": {"tunnel": "bijection", "V": 8, "L": 5},
    "bijection-v64": {"tunnel": "bijection", "V": 64, "L": 64},
    "bijection-v80": {"tunnel": "bijection", "V": 80, "L": 40},  # past RANK_MAX_V: argsort
}
SEEDS = (0, 1)
BATCHES = (3, 64)

DIGESTS = {
    "hmm": "e1164fb07819c0e4",
    "hmm-slow": "0aedc4f8326266fe",
    "hmm-sharpen": "d925011767c26f6b",
    "hmm-s3-o5": "6189378bb17fe968",
    "hmm-s10-o12": "9d31d7711bcf06b3",
    "hmm-k1": "86387b1a94584119",
    "hmm-k70": "d305e03411d24483",
    "bijection": "5c425c46e898d9ea",
    "bijection-paired": "77515de2ce422039",
    "bijection-replacement": "ef94671a05e5eb01",
    "bijection-short": "5c2d9e8940d37017",
    "bijection-v64": "7c8766b89c9714b0",
    "bijection-v80": "b74cd5df097eafe0",
}


def digest(case: str) -> str:
    """SHA-256 (16 hex digits) of two consecutive batches per seed and batch size, and the generator states."""
    cfg = dict(CASES[case])
    tunnel = make_tunnel(cfg.pop("tunnel"), **cfg)
    h = hashlib.sha256()
    for seed in SEEDS:
        for batch in BATCHES:
            g = torch.Generator().manual_seed(seed)
            for _ in range(2):
                ep = tunnel.sample(batch, g)
                for t in (ep.inputs, ep.positions, ep.target, ep.probs):
                    h.update(f"{t.dtype}{tuple(t.shape)}".encode())
                    h.update(t.contiguous().numpy().tobytes())
            h.update(g.get_state().numpy().tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("case", sorted(CASES))
def test_streams_bit_for_bit(case):
    assert digest(case) == DIGESTS[case], f"{case}: the sampler no longer draws the recorded episodes"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ranked_permutations_match_argsort_with_ties(dtype):
    """Pairwise ranks give argsort's permutations; rows with equal entries go to argsort itself."""
    g = torch.Generator().manual_seed(3)
    r = torch.rand(300, 20, generator=g, dtype=dtype)
    r[::7, 3] = r[::7, 11]  # ties in a seventh of the rows
    r[5, :] = 0.5  # a row of equal entries
    r[9, :4] = 0.0  # ties at zero
    perm, rank = _ranked_permutations(r)
    expected = r.argsort(dim=1)
    assert torch.equal(perm, expected)
    assert torch.equal(rank.gather(1, expected), torch.arange(20).expand(300, 20))


def test_ranked_permutations_in_parts(monkeypatch):
    """Rows ranked a few at a time (a small comparison buffer) give argsort's permutations too."""
    monkeypatch.setattr(bijection, "RANK_BUFFER", 7 * 20 * 20)  # 7 rows at a time
    r = torch.rand(100, 20, generator=torch.Generator().manual_seed(4))
    r[::9, 0] = r[::9, 5]
    perm, rank = _ranked_permutations(r)
    assert torch.equal(perm, r.argsort(dim=1))
    assert torch.equal(rank.gather(1, perm), torch.arange(20).expand(100, 20))


if __name__ == "__main__":
    print("DIGESTS = {")
    for name in CASES:
        print(f"    {name!r}: {digest(name)!r},")
    print("}")
