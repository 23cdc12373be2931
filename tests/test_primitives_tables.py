"""Chapter 6's tables (bwt_lite.plotting.primitives_tables), on rows built by hand: each verdict
shows both halves of the rule, the summary and training tables read the rows, the capacity table
says how each size was matched, and the seed lines name the shipped and median seeds."""
from bwt_lite.plotting import primitives_tables as pt


def row(tunnel, arch, mae, passes, beats, paper=None, episodes=100, **extra):
    r = {"kind": "model", "tunnel": tunnel, "arch": arch, "primitive": "transport" if "hmm" in tunnel
         else "accumulation", "entropy_mae_bits": mae, "kl_bits": mae / 2, "accuracy": None,
         "passes_threshold": passes, "beats_baselines": beats, "realises": passes and beats,
         "paper_value": paper, "paper_unit": "bits", "paper_realises": None if paper is None else paper < 0.2,
         "compared_with": ["window-4"] if "hmm" in tunnel else ["prior"],
         "why_not": "" if passes and beats else "entropy MAE 0.048 > 0.00255 (window-4)",
         "params": 1000, "target": "soft", "episodes": episodes, "train_time_s": 61.0,
         "name": f"{tunnel}-{arch}-lite", "seed": 0}
    r.update(extra)
    return r


ROWS = [row("bijection", "transformer", 0.01, True, True, paper=0.007),
        row("bijection", "lstm", 0.003, True, True, episodes=50),
        row("hmm", "transformer", 0.048, True, False, paper=7.5e-5),
        row("hmm", "lstm", 0.416, False, False, paper=0.411),
        {"kind": "baseline", "tunnel": "hmm", "arch": "window-4"}]


def test_tunnel_tables_show_both_halves_of_the_rule():
    tables = pt.tunnel_tables(ROWS)
    assert len(tables) == 2  # one per tunnel, baselines left out
    hmm = str(tables[1])
    assert "beats" in hmm and "passes" in hmm
    assert "realised when it passes entropy MAE <= 0.2 bits and beats the baseline window-4" in hmm
    line = next(x for x in hmm.splitlines() if x.startswith("transformer"))
    assert line.split()[3:6] == ["yes", "no", "no"]  # passes the threshold, loses to the window
    assert "window-4" in hmm.splitlines()[-2]  # the reasons under the table


def test_summary_and_training_tables():
    summary = str(pt.realised_summary(ROWS))
    assert "accumulation" in summary and "strongest exact baseline" in summary
    training = str(pt.training_table(ROWS))
    assert "50%" in training and "100%" in training
    assert pt.yes_no(None) == "-" and pt.yes_no(True) == "yes" and pt.yes_no(False) == "no"


def test_capacity_tables_say_how_each_size_was_matched():
    cap = [{"scale": s, "tunnel": t, "arch": a, "d_model": d, "n_layers": n, "params": p, "ratio": p / ref,
            "matched": "within 10 %"}
           for s, t, a, d, n, p, ref in [("lite", "bijection", "transformer", 8, 2, 100, 100),
                                         ("lite", "bijection", "lstm", 8, 3, 102, 100),
                                         ("paper", "bijection", "transformer", 16, 6, 900, 900),
                                         ("paper", "hmm", "transformer", 32, 9, 2000, 2000),
                                         ("paper", "hmm", "lstm", 16, 6, 600, 2000)]]
    lite, paper = (str(t) for t in pt.capacity_tables(cap))
    assert "+2.0%" in lite and "within 10 %" in lite
    assert "reference: this tunnel's paper-scale transformer (9 layers, d = 32)" in paper
    assert "not matched to this tunnel's 32 x 9 transformer" in paper


def test_seed_lines_name_the_shipped_and_median_seeds():
    def seeds(maes):
        return [{"seed": i, "entropy_mae_bits": m} for i, m in enumerate(maes)]

    shipped = row("bijection", "lstm", 0.003, True, True, episodes=50, seed=4)
    base = {"tunnel": "bijection", "arch": "lstm", "name": "bijection-lstm-lite", "train_episodes": 50,
            "realised_seeds": 5, "realises": True, "median_seed": 4}
    table = {"cells": [{**base, "threads": 1, "seeds": seeds([0.1, 0.2, 0.3, 0.4, 0.5])},
                       {**base, "threads": 2, "seeds": seeds([0.1, 0.2, 0.3, 0.4, 0.6])}]}
    lines = pt.seed_lines(table, {("bijection", "lstm"): shipped})
    text = " ".join(" ".join(lines).split())
    assert "5 of 5 seeds realise accumulation at 1 thread and 2 threads" in text
    assert "largest difference between thread counts: 1.0e-01 bits" in text
    assert "the verdict holds; the shipped checkpoint is seed 4, the median seed is 4" in text
    assert text.endswith("without five seeds at both thread counts: none")
