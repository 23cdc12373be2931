"""Metrics: entropies in bits, KL, TV, accuracy, canonical MAE vs the difference-of-means variant."""
import math

import pytest
import torch

from bwt_lite.metrics import (categorical_scores, entropy_bits, entropy_from_logits_bits, entropy_mae,
                              entropy_mae_of_means, kl_bits, total_variation)


def test_entropy_bits_known_values():
    p = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.25] * 4, [1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    assert entropy_bits(p).tolist() == pytest.approx([1.0, 2.0, 0.0])
    assert entropy_from_logits_bits(torch.zeros(8)).item() == pytest.approx(3.0)


def test_kl_and_tv():
    p = torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64)
    q = torch.tensor([0.25, 0.5, 0.25], dtype=torch.float64)
    assert kl_bits(p, q.log()).item() == pytest.approx(0.5 * math.log2(2) + 0.5 * math.log2(1))
    assert kl_bits(p, p.clamp_min(1e-300).log()).item() == pytest.approx(0.0, abs=1e-12)
    assert total_variation(p, q).item() == pytest.approx(0.25)


def test_permuted_distribution_has_zero_entropy_error_but_positive_kl():
    p = torch.tensor([[[0.7, 0.2, 0.1]]], dtype=torch.float64)
    logits = torch.tensor([[[0.1, 0.2, 0.7]]]).log()
    s = categorical_scores(logits, p, torch.tensor([[0]]))
    assert s["abs_err"].item() == pytest.approx(0.0, abs=1e-6)
    assert s["kl"].item() > 0.5 and s["correct"].item() == 0.0


def test_canonical_mae_sees_errors_the_difference_of_means_hides():
    h_bayes = torch.full((2, 3), 2.0, dtype=torch.float64)
    h_model = torch.tensor([[1.5, 2.0, 2.0], [2.5, 2.0, 2.0]], dtype=torch.float64)  # errors cancel
    mae, curve = entropy_mae(h_model, h_bayes)
    assert mae == pytest.approx(1.0 / 6)
    assert curve.tolist() == pytest.approx([0.5, 0.0, 0.0])
    assert entropy_mae_of_means(h_model, h_bayes) == pytest.approx(0.0)


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="same shape"):
        categorical_scores(torch.zeros(2, 3, 4), torch.zeros(2, 3, 5, dtype=torch.float64), torch.zeros(2, 3))
