"""Chapter 9 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import torch

from bwt_lite.exercises.value_manifold import check_heldout_r2, check_pc1_share, check_spearman


def pc1_share(x):
    s = torch.linalg.svdvals(x - x.mean(0))
    return (s[0] ** 2 / (s ** 2).sum()).item()


def test_pc1_share_accepts_the_solution_and_the_covariance_route(capsys):
    assert check_pc1_share(pc1_share)
    assert check_pc1_share(lambda x: torch.linalg.eigvalsh(torch.cov(x.T)).flip(0)[0] / torch.cov(x.T).trace())
    assert "Correct!" in capsys.readouterr().out


def test_pc1_share_rejects_typical_mistakes(capsys):
    cases = [
        (lambda x: (torch.linalg.svdvals(x)[0] ** 2 / (torch.linalg.svdvals(x) ** 2).sum()).item(), "centre"),
        (lambda x: (torch.linalg.svdvals(x - x.mean(0))[0] / torch.linalg.svdvals(x - x.mean(0)).sum()).item(), "squared"),
        (lambda x: (torch.linalg.svdvals(x - x.mean(0))[0] ** 2 / (x.shape[0] - 1)).item(), "fraction"),
        (lambda x: 0.5, "expected"),
        (lambda x: None, "returned None"),
        (lambda x: [0.5, 0.5], "one number"),
        (lambda x: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_pc1_share(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def avg_ranks(v):
    order = torch.argsort(v)
    ranks = torch.empty_like(v)
    ranks[order] = torch.arange(1, len(v) + 1, dtype=v.dtype)
    for val in v.unique():
        m = v == val
        ranks[m] = ranks[m].mean()
    return ranks


def spearman(x, y):
    rx, ry = avg_ranks(x), avg_ranks(y)
    return torch.corrcoef(torch.stack([rx, ry]))[0, 1].item()


def test_spearman_accepts_the_solution(capsys):
    assert check_spearman(spearman)
    assert "Correct!" in capsys.readouterr().out


def test_spearman_rejects_typical_mistakes(capsys):
    def ordinal(v):
        r = torch.empty_like(v)
        r[torch.argsort(v, stable=True)] = torch.arange(1, len(v) + 1, dtype=v.dtype)
        return r

    cases = [
        (lambda x, y: torch.corrcoef(torch.stack([x, y]))[0, 1].item(), "Pearson"),
        (lambda x, y: torch.corrcoef(torch.stack([ordinal(x), ordinal(y)]))[0, 1].item(), "average rank"),
        (lambda x, y: 1.0, "expected"),
        (lambda x, y: None, "returned None"),
    ]
    for fn, hint in cases:
        assert not check_spearman(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def with_ones(x):
    return torch.cat([x, torch.ones(x.shape[0], 1, dtype=x.dtype)], 1)


def heldout(xf, yf, xt, yt):
    w = torch.linalg.lstsq(with_ones(xf), yf.unsqueeze(1)).solution
    pred = (with_ones(xt) @ w).squeeze(1)
    return (1 - ((yt - pred) ** 2).sum() / ((yt - yt.mean()) ** 2).sum()).item()


def test_heldout_r2_accepts_the_solution(capsys):
    assert check_heldout_r2(heldout)
    assert "Correct!" in capsys.readouterr().out


def test_heldout_r2_rejects_typical_mistakes(capsys):
    def no_intercept(xf, yf, xt, yt):
        w = torch.linalg.lstsq(xf, yf.unsqueeze(1)).solution
        pred = (xt @ w).squeeze(1)
        return (1 - ((yt - pred) ** 2).sum() / ((yt - yt.mean()) ** 2).sum()).item()

    cases = [
        (lambda xf, yf, xt, yt: heldout(xf, yf, xf, yf), "data it was fit on"),
        (lambda xf, yf, xt, yt: heldout(xt, yt, xt, yt), "fit the map on the test split"),
        (no_intercept, "intercept"),
        (lambda *a: 0.0, "expected"),
        (lambda *a: "high", "could not read"),
    ]
    for fn, hint in cases:
        assert not check_heldout_r2(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)
