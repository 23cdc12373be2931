"""Chapter 7 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import math

import numpy as np
import torch

from bwt_lite.exercises.hypothesis_frame import check_chance_cosine, check_head_removal, check_offdiag_cosine


def offdiag(keys):
    k = keys / keys.norm(dim=-1, keepdim=True)
    c = k @ k.T
    n = c.shape[0]
    return (c.abs().sum() - c.diagonal().abs().sum()) / (n * (n - 1))


def test_offdiag_cosine(capsys):
    assert check_offdiag_cosine(offdiag)
    assert check_offdiag_cosine(lambda k: offdiag(k).item())
    assert check_offdiag_cosine(lambda k: np.float64(offdiag(k)))
    assert "Correct!" in capsys.readouterr().out
    cases = [
        (lambda k: (lambda c: c.abs().mean())((k / k.norm(dim=-1, keepdim=True)) @ (k / k.norm(dim=-1, keepdim=True)).T),
         "diagonal"),
        (lambda k: (lambda c: c[~torch.eye(c.shape[0], dtype=torch.bool)].mean())(
            (k / k.norm(dim=-1, keepdim=True)) @ (k / k.norm(dim=-1, keepdim=True)).T), "signed"),
        (lambda k: (k @ k.T)[~torch.eye(k.shape[0], dtype=torch.bool)].abs().mean(), "normalise"),
        (lambda k: 0.5, "expected"),
        (lambda k: None, "None"),
        (lambda k: torch.zeros(3), "one number"),
        (lambda k: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_offdiag_cosine(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def test_chance_cosine(capsys):
    assert check_chance_cosine(lambda d: math.gamma(d / 2) / (math.sqrt(math.pi) * math.gamma((d + 1) / 2)))
    assert check_chance_cosine(lambda d: math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi))
    assert "Correct!" in capsys.readouterr().out
    cases = [
        (lambda d: math.sqrt(2 / (math.pi * d)), "large-d approximation"),
        (lambda d: math.sqrt(1 / d), "root-mean-square"),
        (lambda d: 1 / d, "E cos^2"),
        (lambda d: 0.1, "Archimedes"),
        (lambda d: None, "None"),
        (lambda d: [1, 2], "one number"),
    ]
    for fn, hint in cases:
        assert not check_chance_cosine(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def remove(attn_out, z, W_O, head):
    dh = z.shape[-1]
    return attn_out - z[:, head] @ W_O[:, head * dh:(head + 1) * dh].T


def test_head_removal(capsys):
    assert check_head_removal(remove)

    def by_zeroing(attn_out, z, W_O, head):
        z = z.clone()
        z[:, head] = 0
        B, H, T, dh = z.shape
        return z.transpose(1, 2).reshape(B, T, H * dh) @ W_O.T

    assert check_head_removal(by_zeroing)
    assert check_head_removal(lambda *a: remove(*a).float())
    assert "Correct!" in capsys.readouterr().out

    def rows(attn_out, z, W_O, head):
        dh = z.shape[-1]
        return attn_out - z[:, head] @ W_O[head * dh:(head + 1) * dh, :]

    def zero_dims(attn_out, z, W_O, head):
        out = attn_out.clone()
        dh = z.shape[-1]
        out[..., head * dh:(head + 1) * dh] = 0
        return out

    cases = [(rows, "columns"), (zero_dims, "output dimensions"), (lambda a, z, W, h: a, "differs"),
             (lambda a, z, W, h: a[0], "shape"), (lambda *a: None, "None"), (lambda *a: 1 / 0, "ZeroDivisionError")]
    for fn, hint in cases:
        assert not check_head_removal(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)
