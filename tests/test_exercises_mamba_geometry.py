"""Chapter 10 checkers: right answers pass, typical wrong ones fail with a hint, nothing raises."""
import torch

from bwt_lite.exercises.mamba_geometry import check_pca_scores, check_silhouette


def sil(x, labels, self_in_a=False, all_others=False, no_max=False):
    d = ((x[:, None] - x[None]) ** 2).sum(-1).sqrt()
    scores = []
    for i in range(len(labels)):
        same = labels == labels[i]
        if same.sum() == 1:
            scores.append(0.0)
            continue
        a = d[i, same].mean() if self_in_a else d[i, same].sum() / (same.sum() - 1)
        if all_others:
            b = d[i, ~same].mean()
        else:
            b = min(d[i, labels == k].mean() for k in labels.unique() if k != labels[i])
        scores.append(((b - a) / (b if no_max else max(a, b))).item())
    return sum(scores) / len(scores)


def test_silhouette_accepts_the_solution(capsys):
    assert check_silhouette(sil)
    assert check_silhouette(lambda x, l: torch.tensor([sil(x, l)]))
    assert "Correct!" in capsys.readouterr().out


def test_silhouette_rejects_typical_mistakes(capsys):
    cases = [
        (lambda x, l: sil(x, l, self_in_a=True), "cluster size - 1"),
        (lambda x, l: sil(x, l, all_others=True), "nearest"),
        (lambda x, l: sil(x, l, no_max=True), "max(a, b)"),
        (lambda x, l: 0.0, "expected"),
        (lambda x, l: None, "returned None"),
        (lambda x, l: 1 / 0, "ZeroDivisionError"),
    ]
    for fn, hint in cases:
        assert not check_silhouette(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)


def scores(x, k):
    xc = x - x.mean(0)
    return xc @ torch.linalg.svd(xc, full_matrices=False).Vh[:k].T


def test_pca_scores_accepts_the_solution_with_any_signs(capsys):
    assert check_pca_scores(scores)
    assert check_pca_scores(lambda x, k: -scores(x, k))
    assert check_pca_scores(lambda x, k: scores(x, k) * torch.tensor([1.0, -1.0, 1.0][:k], dtype=torch.float64))
    assert "Correct!" in capsys.readouterr().out


def test_pca_scores_rejects_typical_mistakes(capsys):
    def uncentred(x, k):
        xc = x - x.mean(0)
        return x @ torch.linalg.svd(xc, full_matrices=False).Vh[:k].T

    cases = [
        (uncentred, "centre"),
        (lambda x, k: torch.linalg.svd(x - x.mean(0), full_matrices=False).Vh[:k], "components themselves"),
        (lambda x, k: scores(x, k).flip(1), "expected"),
        (lambda x, k: None, "returned None"),
    ]
    for fn, hint in cases:
        assert not check_pca_scores(fn)
        out = capsys.readouterr().out
        assert "Not yet" in out and hint in out, (hint, out)
