"""`bwt em-vs-sgd`: per-seed steps, speedup with its interval, the paper's figure; errors."""
import json

import pytest

from bwt_lite.cli import main


def test_em_vs_sgd_json(capsys):
    assert main(["em-vs-sgd", "--seeds", "2", "--steps", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arms"] == ["sgd", "values x10"] and out["n_params"] == 820
    assert len(out["steps_to_sgd_final"]["values x10"]) == len(out["speedup"]["values x10"]) == 2
    assert out["config"]["steps"] == 20 and out["config"]["seeds"] == 2
    s = out["summary"]["values x10"]
    assert s["low"] <= s["mean"] <= s["high"] and s["level"] == 0.95
    assert out["paper"]["speedup"]["value"] == 2.3 and out["paper"]["em_steps"]["value"] == 430
    assert round(out["row_floor_nats"], 3) == 1.829


def test_em_vs_sgd_text_with_controls(capsys):
    assert main(["em-vs-sgd", "--seeds", "1", "--steps", "10", "--controls"]) == 0
    text = capsys.readouterr().out
    for fragment in ("820 parameters", "held-out", "sgd:", "values x10:", "readout x10:", "routing x10:",
                     "speedup of values x10", "paper: 2.3x (430 vs 1000 steps"):
        assert fragment in text, fragment


@pytest.mark.parametrize("argv, fragment", [(["--seeds", "0"], "--seeds and --steps must be >= 1"),
                                            (["--steps", "x"], "argument --steps: invalid int value")])
def test_em_vs_sgd_bad_input(argv, fragment, capsys):
    with pytest.raises(SystemExit) as e:
        main(["em-vs-sgd", *argv])
    assert e.value.code == 2 and fragment in capsys.readouterr().err
