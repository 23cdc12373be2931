"""Checkers for chapter 8 (progressive elimination: attention by role across depth, layer ablation).

Each checker runs the student's function on seeded random episodes or hand-made cases, compares
the result with the package's own answer (:mod:`bwt_lite.geometry.elimination`), prints one line
(a success line, or what is off and a hint) and returns a bool. A wrong or unfinished answer never
raises.

- :func:`check_position_roles`: ``fn(keys, values, t)``, the role of every position for query step t
  (with-replacement bijection layout).
- :func:`check_uniform_attention`: ``fn(t)``, the mass on eliminated positions and the entropy of
  uniform causal attention at query step t (separate layout).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from ..geometry.elimination import ROLES, bijection_roles
from ..tunnels import Episodes
from ..tunnels.bijection import Bijection
from . import call, pairs_text, report

_V = 6


def _cases() -> list[tuple[list[int], list[int]]]:
    """(keys, values) of with-replacement bijection episodes: random ones and ones with many repeats."""
    tunnel = Bijection(V=_V, L=9, variant="replacement")
    g = torch.Generator().manual_seed(808)
    ep = tunnel.sample(6, g)
    keys = ep.inputs[:, 0::2].tolist()
    values = ep.target.tolist()
    out = list(zip(keys, values))
    pi = [3, 0, 5, 1, 4, 2]
    hand = [2, 2, 0, 2, 5, 0, 1, 1, 2]
    out.append((hand, [pi[k] for k in hand]))
    return out


def _roles(keys: list[int], values: list[int]) -> list[list[str]]:
    tunnel = Bijection(V=_V, L=len(keys), variant="replacement")
    k, v = torch.tensor([keys]), torch.tensor([values])
    tokens = [t for pair in zip(keys, [_V + x for x in values]) for t in pair][:-1]
    ep = Episodes(inputs=torch.tensor([tokens]), positions=tunnel.positions, target=v, probs=tunnel.posterior(k, v))
    r = bijection_roles(tunnel, ep)[0]
    return [[ROLES[i] for i in row[: 2 * t + 1].tolist()] for t, row in enumerate(r)]


def check_position_roles(fn: Callable[[list[int], list[int], int], Any]) -> bool:
    """``fn(keys, values, t)``: for the with-replacement layout ``[k0, V+v0, k1, V+v1, ..., k_t]`` (V = 6),
    return the roles of positions 0..2t as strings ``"self"``, ``"key"``, ``"consistent"``, ``"eliminated"``."""
    n = 0
    for keys, values in _cases():
        want_all = _roles(keys, values)
        for t in range(len(keys)):
            got, err = call(fn, list(keys), list(values), t)
            where = f"at step t = {t} (query key {keys[t]}; {pairs_text(keys[:t], values[:t])})"
            if err:
                return report(False, f"{where}: {err}")
            want = want_all[t]
            if got is None:
                return report(False, f"{where}: your function returned None; return a list of {2 * t + 1} role names.")
            try:
                got = [str(x) for x in got]
            except TypeError:
                return report(False, f"{where}: return a list of role names, got {type(got).__name__}.")
            if len(got) != len(want):
                return report(False, f"{where}: return one role for each of the {2 * t + 1} visible positions "
                                     f"0..{2 * t}, got {len(got)}.")
            for j, (a, b) in enumerate(zip(got, want)):
                if a == b:
                    continue
                if b == "consistent" and a == "eliminated":
                    hint = (f"position {j} shows value {values[j // 2]}, which key {keys[t]} was bound to earlier: "
                            "it is the answer, so it is consistent (a repeated key has a point-mass posterior).")
                elif b == "eliminated" and a == "consistent":
                    hint = (f"position {j} shows value {values[j // 2]}, bound to key {keys[j // 2]} != {keys[t]}; "
                            "in a bijection no other key can have it, so it is ruled out.")
                elif b == "self":
                    hint = "the last visible position 2t is the query itself: 'self'."
                elif b == "key":
                    hint = f"position {j} is even: it holds a key token (role 'key'), which names no answer."
                else:
                    hint = f"position {j} should be {b!r}, you said {a!r}."
                return report(False, f"{where}: {hint}")
            n += 1
    return report(True, f"all roles right at {n} query steps, repeated keys (a consistent position) and new keys "
                        "(every revealed value eliminated) alike.")


def check_uniform_attention(fn: Callable[[int], Any]) -> bool:
    """``fn(t)`` -> ``(mass, entropy)``: for the separate layout (V = 20, L = 19) and a query at key step
    t, the attention mass uniform causal attention puts on the eliminated positions, and its entropy in bits."""
    for t in range(19):
        got, err = call(fn, t)
        if err:
            return report(False, f"at t = {t}: {err}")
        try:
            mass, ent = (float(x) for x in got)
        except Exception:
            return report(False, f"at t = {t}: return a pair (mass, entropy_bits), got {got!r}.")
        want_mass, want_ent = t / (2 * t + 1), math.log2(2 * t + 1)
        if not math.isclose(mass, want_mass, rel_tol=1e-9, abs_tol=1e-12):
            if t > 0 and math.isclose(mass, t / (2 * t), rel_tol=1e-9):
                return report(False, f"at t = {t}: the query sees 2t + 1 = {2 * t + 1} positions (itself included), "
                                     f"not 2t.")
            if math.isclose(mass, (t + 1) / (2 * t + 1), rel_tol=1e-9):
                return report(False, f"at t = {t}: you counted the key positions (t past keys + the query): the "
                                     f"eliminated positions are the t value positions.")
            return report(False, f"at t = {t}: the mass on eliminated positions should be {want_mass:.4f}, got {mass:.4f}.")
        if not math.isclose(ent, want_ent, rel_tol=1e-9, abs_tol=1e-12):
            if math.isclose(ent, math.log(2 * t + 1), rel_tol=1e-9, abs_tol=1e-12):
                return report(False, f"at t = {t}: that entropy is in nats; use log2 for bits.")
            return report(False, f"at t = {t}: the entropy of uniform attention over the visible positions should be "
                                 f"{want_ent:.4f} bits, got {ent:.4f}.")
    return report(True, "uniform attention gives t/(2t+1) of its mass to the eliminated values (under 1/2 at every "
                        "step) and log2(2t+1) bits of entropy: the baselines a trained model is compared with.")
