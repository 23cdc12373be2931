"""Checkers for chapter 13 (where in-context Bayes stops: the modular recurrence).

Each checker runs the student's function on seeded random sequences (recurrences, i.i.d. residues and
hand-made cases: a value that stands still, a step that breaks the recurrence), compares the answer
with the package's (:func:`bwt_lite.tunnels.recurrence.recurrence_posterior`, and a direct count),
prints one line (a success line, or what is off and a hint) and returns a bool. A wrong or unfinished
answer never raises.

- :func:`check_consistent_pairs`: ``fn(values, p)``, how many pairs (a, b) explain every step of ``values``.
- :func:`check_class_posterior`: ``fn(values, p)``, the probability that ``values`` come from a recurrence.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import torch

from ..tunnels.recurrence import Recurrence, recurrence_posterior
from . import answer_number
from . import call as _call
from . import report as _report

_TOL = 1e-9


def count_pairs(values: list[int], p: int) -> int:
    """The number of pairs (a, b) in Z_p x Z_p with ``values[t+1] = a values[t] + b (mod p)`` at every step."""
    return sum(all((a * values[t] + b) % p == values[t + 1] for t in range(len(values) - 1))
               for a in range(p) for b in range(p))


def _cases(seed: int) -> Iterator[tuple[str, list[int], int]]:
    """(label, values, p): short and long prefixes of random episodes, then the hand-made cases."""
    for p, n in ((17, 6), (5, 6), (7, 4)):
        t = Recurrence(p=p, length=8)
        values, is_rec = t.sample_values(n, torch.Generator().manual_seed(seed + p))
        for b in range(n):
            for length in (1, 2, 3, 4, 6):
                kind = "a recurrence" if is_rec[b] else "i.i.d. residues"
                yield f"{kind} mod {p} (first {length} values)", values[b, :length].tolist(), p
    yield "a value that stands still, mod 17", [5, 5, 5], 17
    yield "a value that stands still, then moves, mod 17", [5, 5, 6], 17
    yield "a step that breaks the recurrence, mod 17", [0, 1, 2, 5], 17
    yield "no values at all, mod 17", [], 17


def check_consistent_pairs(fn: Callable[[list[int], int], Any]) -> bool:
    """``fn(values, p)`` -> int: the pairs (a, b) (``a = 0`` allowed) that explain every step of ``values``
    (a list of residues mod the prime ``p``); with fewer than two values every one of the p^2 pairs does."""
    for label, values, p in _cases(1313):
        want = count_pairs(values, p)
        got, err = _call(fn, list(values), p)
        if err:
            return _report(False, f"on {label} {values}: {err}")
        x, err = answer_number(got)
        if err:
            return _report(False, f"on {label} {values}: {err}")
        if x == want:
            continue
        hint = ""
        if len(values) < 2 and x == 0:
            hint = " With no step to check, no pair is ruled out: all p^2 pairs are consistent."
        elif want == p and len(values) >= 2 and values[0] == values[-1] and x == 1:
            hint = (" When the value stands still (x_1 = x_0), every a works with b = x_0 (1 - a): a step that"
                    " repeats a value cannot tell the pairs apart.")
        elif x == want * p or x == want * p * p:
            hint = " Count pairs (a, b) only: x_0 is seen, it is not a free parameter."
        elif x == want - 1 or x == want - p:
            hint = " a = 0 is allowed (x_{t+1} = b for every t is a recurrence too)."
        return _report(False, f"on {label} {values}: expected {want} pairs, got {x:g}.{hint}")
    return _report(True, "you count the programs consistent with the values, the fixed point and a = 0 included.")


def check_class_posterior(fn: Callable[[list[int], int], Any]) -> bool:
    """``fn(values, p)`` -> float: the posterior probability that ``values`` (residues mod ``p``) come from a
    recurrence, with prior 1/2 against i.i.d. uniform residues and a, b, x_0 uniform on Z_p."""
    for label, values, p in _cases(2626):
        if not values:
            want = 0.5
        else:
            _, rec = recurrence_posterior(torch.tensor([values + [0]]), p)
            want = rec[0, len(values)].item()
        got, err = _call(fn, list(values), p)
        if err:
            return _report(False, f"on {label} {values}: {err}")
        x, err = answer_number(got)
        if err:
            return _report(False, f"on {label} {values}: {err}")
        if abs(x - want) <= _TOL:
            continue
        n = len(values)
        c = count_pairs(values, p)
        hint = ""
        if abs(x - (c / p ** 2) / (c / p ** 2 + 1)) <= _TOL and n:
            hint = (" The recurrence's likelihood is (1/p) x C / p^2 and the i.i.d. one p^-n: divide by the"
                    " right powers of p (the ratio is C p^(n - 3)).")
        elif abs(x - 0.5) <= _TOL:
            hint = " A posterior of 1/2 is right only until the fourth value; after that the count C decides."
        elif n and c == 0 and x > 0:
            hint = " No pair explains these values: the recurrence is ruled out (posterior 0)."
        return _report(False, f"on {label} {values}: expected {want:.6f}, got {x:.6f}.{hint}")
    return _report(True, "your class posterior is Bayes': 1/2 for three values, then p/(p + 1), p^2/(p^2 + 1) "
                         "while the program holds, and 0 once a step breaks it.")


__all__ = ["check_class_posterior", "check_consistent_pairs", "count_pairs"]
