"""The window ladder beside the models: reading it off reproduce() rows, placing a model, the plot."""
import matplotlib
import pytest

from bwt_lite.plotting import plot_window_ladder
from bwt_lite.window_ladder import ladder, window_equivalent

matplotlib.use("Agg")


def _rows():
    base = [{"tunnel": "hmm-slow", "kind": "baseline", "arch": f"window-{w}", "entropy_mae_bits": 0.4 / (w + 1),
             "kl_bits": 0.3 / (w + 1) ** 2} for w in (2, 0, 1, 3)]
    model = [{"tunnel": "hmm-slow", "kind": "model", "arch": "mamba", "entropy_mae_bits": 0.09, "kl_bits": 0.01}]
    other = [{"tunnel": "hmm", "kind": "baseline", "arch": "window-0", "entropy_mae_bits": 9.0, "kl_bits": 9.0}]
    return base + model + other


def test_ladder_sorts_the_windows_of_one_tunnel():
    ws, values = ladder(_rows(), "hmm-slow")
    assert ws == [0, 1, 2, 3] and values["entropy_mae_bits"] == [0.4, 0.2, 0.4 / 3, 0.1]
    with pytest.raises(ValueError, match="no window baselines"):
        ladder(_rows(), "recall")


def test_window_equivalent_places_a_value_on_the_ladder():
    ws, values = [0, 1, 2], [0.4, 0.2, 0.1]
    assert window_equivalent(0.5, ws, values) == "above window-0"
    assert window_equivalent(0.15, ws, values) == "between window-1 and window-2"
    assert window_equivalent(0.2, ws, values) == "between window-0 and window-1"  # ties go to the shorter window
    assert window_equivalent(0.05, ws, values) == "below window-2"


def test_equivalent_window_interpolates_on_the_ladder():
    from bwt_lite.window_ladder import equivalent_window, look_back_text

    ws, values = [0, 1, 2, 3], [0.4, 0.2, 0.1, 0.05]
    assert equivalent_window(0.2, ws, values) == 1.0 and equivalent_window(0.5, ws, values) == 0.0
    assert equivalent_window(0.1414, ws, values) == 1.5  # halfway in the log of the error
    assert equivalent_window(0.01, ws, values) == "> 3"
    assert look_back_text(1.5) == "a look-back of about 1.5 symbols" and "more than 3 symbols" in look_back_text("> 3")
    with pytest.raises(ValueError):
        equivalent_window(0.1, [0, 1], [0.2])


def test_plot_has_both_metrics_and_the_model_lines():
    fig = plot_window_ladder(_rows(), "hmm-slow")
    a, b = fig.axes[:2]
    assert a.get_yscale() == "log" and "KL" in b.get_ylabel()
    assert [line.get_label() for line in a.get_lines()][-1] == "mamba"


def _sweep():
    windows = {f"window-{w}": {"entropy_mae_bits": 0.4 / (w + 1), "kl_bits": 0.1 / (w + 1)} for w in (1, 0, 4)}
    runs = [{"lr": lr, "seed": s, "entropy_mae_bits": 0.05, "kl_bits": 0.01, "realises": s == 1,
             "history": [{"step": 500, "entropy_mae_bits": 0.4}, {"step": 1000, "entropy_mae_bits": 0.05}]}
            for lr in (2e-3, 1e-3) for s in (0, 1)]
    return {"windows": windows, "runs": runs}


def test_seed_sweep_windows_and_curves(tmp_path):
    from bwt_lite.plotting import plot_seed_curves
    from bwt_lite.window_ladder import load_slow_seeds, windows_of

    ws, values = windows_of(_sweep())
    assert ws == [0, 1, 4] and values == [0.4, 0.2, 0.08]
    fig = plot_seed_curves(_sweep())
    assert [ax.get_title() for ax in fig.axes] == ["peak learning rate 0.002", "peak learning rate 0.001"]
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == ["seed 0", "seed 1", "window-4"]  # the windows the sweep has among 4, 8 and 12
    assert fig.axes[0].get_lines()[2].get_ydata()[0] == 0.08
    with pytest.raises(FileNotFoundError, match="hmm_lr_sweep.py --variant slow"):
        load_slow_seeds(tmp_path / "missing.json")


def test_mamba_sweep_loads_what_the_experiment_writes(tmp_path):
    import json

    from bwt_lite.window_ladder import load_mamba_sweep, windows_of

    sweep = {**_sweep(), "runs": [{"change": "recipe", "d_model": 112, "entropy_mae_bits": 0.03}]}
    (tmp_path / "sweep.json").write_text(json.dumps(sweep))
    loaded = load_mamba_sweep(tmp_path / "sweep.json")
    assert loaded["runs"][0]["change"] == "recipe" and windows_of(loaded)[0] == [0, 1, 4]
    with pytest.raises(FileNotFoundError, match="hmm_mamba_sweep.py"):
        load_mamba_sweep(tmp_path / "missing.json")


def test_position_runs_load_and_give_one_row_per_run(tmp_path):
    import json

    from bwt_lite.window_ladder import load_position_runs, position_rows

    def at(before, past, kl, transports):
        return {"in_range": {"entropy_mae_bits": before, "kl_bits": 0.0},
                "past": {"entropy_mae_bits": past, "kl_bits": kl},
                "past_over_in_range": past / before, "transports": transports,
                "per_position": {"entropy_mae": [before, past], "kl": [0.0, kl]}}

    runs = {"lengths": [20, 50], "windows_past": {"50": {"window-1": {"entropy_mae_bits": 0.08, "kl_bits": 0.03}}},
            "runs": [{"scheme": "rotary", "alibi": False, "seed": 0, "warmup_steps": 2000, "shipped": False,
                      "per_length": {"50": at(0.1, 0.1, 0.01, True)}},
                     {"scheme": "learned", "alibi": True, "seed": 1, "warmup_steps": 200, "shipped": False,
                      "per_length": {"50": at(0.08, 0.12, 0.09, False)}}]}
    (tmp_path / "pos.json").write_text(json.dumps(runs))
    rows = position_rows(load_position_runs(tmp_path / "pos.json"), 50)
    assert [(r["positions"], r["seed"], r["warmup_steps"]) for r in rows] == [("learned + ALiBi", 1, 200),
                                                                             ("rotary", 0, 2000)]
    assert rows[0]["ratio"] == pytest.approx(1.5) and rows[0]["kl_past"] == 0.09 and rows[1]["transports"] is True
    assert rows[0]["per_position"] == [0.08, 0.12]  # the learned table first, whatever the file's order
    with pytest.raises(ValueError, match="not past the training length"):
        position_rows(runs, 20)
    with pytest.raises(FileNotFoundError, match="hmm_positions.py"):
        load_position_runs(tmp_path / "missing.json")


def _best_models() -> dict[str, list[tuple[str, float]]]:
    """Every model score the shipped records hold on each transport cell: (where, entropy MAE)."""
    from bwt_lite.cell_seeds import load_cell_seeds
    from bwt_lite.claims.paper_scale import load_paper_scale
    from bwt_lite.window_ladder import load_mamba_sweep, load_slow_seeds

    found: dict[str, list[tuple[str, float]]] = {"hmm": [], "hmm-slow": []}
    for cell in load_cell_seeds()["cells"]:
        if cell["tunnel"] in found:
            found[cell["tunnel"]] += [(f"{cell['name']} seed {s['seed']}", s["entropy_mae_bits"]) for s in cell["seeds"]]
    found["hmm-slow"] += [(f"slow sweep seed {r['seed']}", r["entropy_mae_bits"]) for r in load_slow_seeds()["runs"]]
    found["hmm"] += [(f"Mamba sweep {r['change']}", r["entropy_mae_bits"]) for r in load_mamba_sweep()["runs"]]
    recorded = load_paper_scale()
    if recorded is not None:
        found["hmm"] += [(f"paper scale {c['id']}", c["details"]["ours"]["entropy_mae_bits"])
                         for c in recorded["claims"] if c["id"] == "hmm-transformer"]
    return found


def test_every_ladder_reaches_a_tenth_of_the_best_model():
    """A transport cell's longest window scores at most a tenth of the best model's entropy MAE on it (lite and
    paper-scale records alike) or is the episode length, so no model sits past the end of the ladder."""
    from bwt_lite.baselines import evaluate_baseline
    from bwt_lite.reproduce import cell_preset
    from bwt_lite.tunnels import make_tunnel
    from bwt_lite.verdicts import MAX_WINDOW

    for cell, scores in _best_models().items():
        tunnel = make_tunnel(**cell_preset(cell, "transformer", "lite").tunnel)
        top = MAX_WINDOW[cell]
        where, best = min(scores, key=lambda s: s[1])
        longest = evaluate_baseline(tunnel, f"window-{top}", episodes=1024, seed=0).entropy_mae_bits
        assert top >= tunnel.K or longest <= best / 10, (
            f"{cell}: window-{top} scores {longest:.3g} bits, more than a tenth of {where}'s {best:.3g}")



def test_a_record_extends_its_ladder_only_on_its_own_episodes():
    from bwt_lite.reproduce import cell_preset
    from bwt_lite.verdicts import MAX_WINDOW
    from bwt_lite.window_ladder import extended_ladder, missing_windows

    args = cell_preset("hmm", "transformer", "lite").tunnel
    full = extended_ladder("hmm", args, {}, 64)
    stored = {k: {"entropy_mae_bits": v["entropy_mae_bits"], "kl_bits": v["kl_bits"]} for k, v in full.items()
              if k in ("window-0", "window-1")}
    grown = extended_ladder("hmm", args, stored, 64)
    assert missing_windows("hmm", grown) == [] and len(grown) == MAX_WINDOW["hmm"] + 1
    assert set(grown["window-8"]) == {"entropy_mae_bits", "kl_bits"}  # the metrics the record keeps
    assert missing_windows("hmm", stored) == [f"window-{w}" for w in range(2, MAX_WINDOW["hmm"] + 1)]
    with pytest.raises(ValueError, match="other episodes"):
        extended_ladder("hmm", args, stored, 32)
