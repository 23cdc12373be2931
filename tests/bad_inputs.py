"""Bad inputs to the ``bwt`` command line: each must end in one clear error, before any work starts.

    python tests/bad_inputs.py [--json]

Every case runs against a temporary ``BWT_CACHE_DIR`` and is classified as

- clean: a non-zero exit code, no traceback, and an ``error:`` line with the case's fragment (the
  option it names, e.g. ``--ckpt-every``);
- traceback: an exception escaped ``main`` (or "Traceback" was printed);
- silent accept: exit code 0 for an input that should be refused;
- timeout: the command started real work (training, loading, timing, evaluating) or ran past its
  time limit;
- unclear: refused without a traceback, but no error line names the option.

Most cases run in this process through :func:`bwt_lite.cli.main`, with the functions that start work
replaced by ones that raise at once, so a case that would train fails immediately instead of at the
time limit. Ctrl-C during training, a closed pipe and a full disk run as subprocesses. The script
prints a table and a closing line (``N cases: N clean, 0 tracebacks, 0 silent accepts, 0 timeouts``)
and exits 0 only when every case is clean. ``tests/test_cli_bad_inputs.py`` runs the same cases.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

TIMEOUT_S = 20  # per in-process case (they take milliseconds when the input is refused)
SUBPROCESS_TIMEOUT_S = 40  # per subprocess case: Python and torch start up first
KINDS = ("clean", "traceback", "silent accept", "timeout", "unclear")


@dataclass(frozen=True)
class Case:
    name: str  # unique id, used as the pytest id
    argv: tuple[str, ...]  # the arguments after `bwt`
    names: str  # what the error line must contain: the option (or the thing) it refuses
    cache: str = "ok"  # BWT_CACHE_DIR: ok (an empty folder), file, under-file, unwritable, deep, long-name
    needs_no_gpu: bool = False  # only meaningful where no CUDA GPU is visible


@dataclass
class Outcome:
    name: str
    kind: str  # one of KINDS, or "skipped"
    rc: int | None
    seconds: float
    detail: str  # the error line, the exception, or why the case was skipped

    def describe(self) -> str:
        return f"{self.name}: {self.kind} (rc {self.rc}) {self.detail}"


def _c(name: str, argv: str, names: str, **kw) -> Case:
    return Case(name, tuple(argv.split()), names, **kw)


HUGE = "12345678901234567890123"  # 23 digits: past any 64-bit integer
CASES: list[Case] = [
    # top level
    _c("no-command", "", "command"),
    _c("unknown-command", "nope", "invalid choice"),
    # episode
    _c("episode-unknown-tunnel", "episode nope", "argument tunnel"),
    _c("episode-no-tunnel", "episode", "tunnel"),
    _c("episode-seed-negative", "episode bijection --seed -1", "--seed"),
    _c("episode-seed-huge", f"episode bijection --seed {HUGE}", "--seed"),
    _c("episode-seed-not-int", "episode bijection --seed x", "--seed"),
    _c("episode-seed-float", "episode bijection --seed 1.5", "--seed"),
    _c("episode-unknown-variant", "episode bijection --variant x", "--variant"),
    _c("episode-variant-of-another-tunnel", "episode hmm --variant paired", "--variant"),
    _c("episode-unknown-option", "episode bijection --json --bogus", "--bogus"),
    # info
    _c("info-unknown-tunnel", "info nope transformer", "argument tunnel"),
    _c("info-unknown-arch", "info bijection rnn", "argument arch"),
    _c("info-unknown-scale", "info bijection mlp --scale huge", "--scale"),
    _c("info-steps-zero", "info bijection transformer --steps 0", "--steps"),
    _c("info-seed-negative", "info bijection transformer --seed -5", "--seed"),
    _c("info-unknown-variant", "info bijection transformer --variant nope", "--variant"),
    _c("info-unused-device", "info bijection transformer --device cpu", "--device"),
    _c("info-unknown-target", "info recall transformer --target hard", "--target"),
    # train
    _c("train-ckpt-every-zero", "train bijection transformer --ckpt-every 0", "--ckpt-every"),
    _c("train-ckpt-every-negative", "train bijection transformer --ckpt-every -1", "--ckpt-every"),
    _c("train-ckpt-every-not-int", "train bijection transformer --ckpt-every x", "--ckpt-every"),
    _c("train-log-every-nan", "train bijection transformer --log-every nan", "--log-every"),
    _c("train-log-every-inf", "train bijection transformer --log-every inf", "--log-every"),
    _c("train-log-every-negative", "train bijection transformer --log-every -1", "--log-every"),
    _c("train-log-every-not-number", "train bijection transformer --log-every abc", "--log-every"),
    _c("train-steps-zero", "train bijection transformer --steps 0", "--steps"),
    _c("train-steps-negative", "train bijection transformer --steps -3", "--steps"),
    _c("train-steps-huge", "train bijection transformer --steps 100000000000", "--steps"),
    _c("train-steps-float", "train bijection transformer --steps 1e3", "--steps"),
    _c("train-seed-huge", f"train bijection transformer --seed {HUGE}", "--seed"),
    _c("train-seed-negative", "train bijection transformer --seed -1", "--seed"),
    _c("train-device-meta", "train bijection transformer --device meta", "--device"),
    _c("train-device-absent-gpu-index", "train bijection transformer --device cuda:99", "--device"),
    _c("train-device-unknown", "train bijection transformer --device nope", "--device"),
    _c("train-device-empty", "train bijection transformer --device=", "--device"),
    _c("train-device-cuda-without-gpu", "train bijection transformer --device cuda", "--device", needs_no_gpu=True),
    _c("train-unknown-amp", "train bijection transformer --amp fp8", "--amp"),
    _c("train-paper-on-cpu", "train bijection transformer --scale paper --device cpu", "--allow-cpu-paper"),
    _c("train-unknown-variant", "train bijection transformer --variant nope", "--variant"),
    _c("train-unknown-target", "train bijection transformer --target hard", "--target"),
    _c("train-unknown-arch", "train bijection rnn", "argument arch"),
    _c("train-cache-is-a-file", "train bijection mlp --steps 3", "BWT_CACHE_DIR", cache="file"),
    _c("train-cache-under-a-file", "train bijection mlp --steps 3", "BWT_CACHE_DIR", cache="under-file"),
    _c("train-cache-not-writable", "train bijection mlp --steps 3", "BWT_CACHE_DIR", cache="unwritable"),
    _c("train-cache-path-too-long", "train bijection mlp --steps 3", "BWT_CACHE_DIR", cache="deep"),
    _c("train-cache-name-too-long", "train bijection mlp --steps 3", "BWT_CACHE_DIR", cache="long-name"),
    # eval
    _c("eval-episodes-zero", "eval bijection mlp --episodes 0", "--episodes"),
    _c("eval-episodes-negative", "eval bijection mlp --episodes -5", "--episodes"),
    _c("eval-episodes-huge", "eval bijection mlp --episodes 1000000000", "--episodes"),
    _c("eval-episodes-not-int", "eval bijection mlp --episodes many", "--episodes"),
    _c("eval-eval-seed-negative", "eval bijection mlp --eval-seed -1", "--eval-seed"),
    _c("eval-eval-seed-huge", f"eval bijection mlp --eval-seed {HUGE}", "--eval-seed"),
    _c("eval-length-zero", "eval bijection mlp --length 0", "--length"),
    _c("eval-length-negative", "eval bijection mlp --length -2", "--length"),
    _c("eval-length-huge", "eval hmm transformer --length 100000", "--length"),
    _c("eval-length-past-position-table", "eval hmm transformer --length 60", "--length"),
    _c("eval-length-past-the-tunnel", "eval bijection transformer --length 25", "--length"),
    _c("eval-length-mqar-has-none", "eval recall transformer --variant mqar --length 10", "--length"),
    _c("eval-length-past-4x-the-table-without-one", "eval hmm transformer --positions none --length 300", "--length"),
    _c("eval-positions-unknown", "eval hmm transformer --positions absolute", "--positions"),
    _c("train-positions-rotary-not-transformer", "train hmm mlp --positions rotary --steps 3", "--positions"),
    _c("train-alibi-not-transformer", "train hmm lstm --alibi --steps 3", "--alibi"),
    _c("train-positions-alibi-not-transformer", "train hmm mamba --positions alibi --steps 3", "--positions"),
    _c("eval-device-meta", "eval bijection mlp --device meta", "--device"),
    _c("eval-paper-on-cpu", "eval bijection transformer --scale paper --device cpu", "--allow-cpu-paper"),
    _c("eval-unknown-variant", "eval bijection transformer --variant nope --length 5", "--variant"),
    _c("eval-steps-zero", "eval bijection mlp --steps 0", "--steps"),
    _c("eval-cache-is-a-file", "eval bijection mlp --steps 3", "BWT_CACHE_DIR", cache="file"),
    _c("eval-cache-not-writable", "eval bijection mlp --steps 3", "BWT_CACHE_DIR", cache="unwritable"),
    # bench
    _c("bench-repeat-zero", "bench --repeat 0", "--repeat"),
    _c("bench-repeat-negative", "bench --repeat -1", "--repeat"),
    _c("bench-repeat-huge", "bench --repeat 100000", "--repeat"),
    _c("bench-repeat-not-int", "bench --repeat x", "--repeat"),
    _c("bench-device-meta", "bench --device meta", "--device"),
    _c("bench-target-nan", "bench --train --target nan", "--target"),
    _c("bench-target-zero", "bench --train --target 0", "--target"),
    _c("bench-target-without-train", "bench --target 0.05", "--target"),
    _c("bench-train-paper-on-cpu", "bench --train --scale paper --device cpu", "--allow-cpu-paper"),
    _c("bench-unknown-tunnel", "bench --tunnels nope", "--tunnels"),
    _c("bench-unknown-arch", "bench --archs rnn", "--archs"),
    _c("bench-unknown-scale", "bench --scale huge", "--scale"),
    _c("bench-unknown-amp", "bench --amp x", "--amp"),
    # bench-scan
    _c("bench-scan-length-zero", "bench-scan --lengths 0", "--lengths"),
    _c("bench-scan-length-negative", "bench-scan --lengths -8", "--lengths"),
    _c("bench-scan-length-huge", "bench-scan --lengths 100000", "--lengths"),
    _c("bench-scan-length-not-int", "bench-scan --lengths 16 x", "--lengths"),
    _c("bench-scan-batch-zero", "bench-scan --batch 0", "--batch"),
    _c("bench-scan-batch-negative", "bench-scan --batch -1", "--batch"),
    _c("bench-scan-batch-huge", "bench-scan --batch 100000", "--batch"),
    _c("bench-scan-d-inner-zero", "bench-scan --d-inner 0", "--d-inner"),
    _c("bench-scan-d-inner-huge", "bench-scan --d-inner 1000000", "--d-inner"),
    _c("bench-scan-repeat-zero", "bench-scan --repeat 0", "--repeat"),
    _c("bench-scan-repeat-huge", "bench-scan --repeat 100000000", "--repeat"),
    _c("bench-scan-sizes-together-huge", "bench-scan --batch 1024 --lengths 4096 --d-inner 64", "--batch"),
    # ship
    _c("ship-unknown-preset", "ship --only no-such-preset", "--only"),
    _c("ship-jobs-zero", "ship --jobs 0", "--jobs"),
    _c("ship-jobs-negative", "ship --jobs -2", "--jobs"),
    _c("ship-jobs-huge", "ship --jobs 100000", "--jobs"),
    _c("ship-device-meta", "ship --device meta", "--device"),
    # reproduce
    _c("reproduce-episodes-zero", "reproduce --episodes 0", "--episodes"),
    _c("reproduce-episodes-huge", "reproduce --episodes 1000000000", "--episodes"),
    _c("reproduce-eval-seed-negative", "reproduce --eval-seed -1", "--eval-seed"),
    _c("reproduce-jobs-zero", "reproduce --jobs 0", "--jobs"),
    _c("reproduce-jobs-huge", "reproduce --jobs 100000", "--jobs"),
    _c("reproduce-paper-on-cpu", "reproduce --scale paper --device cpu", "--allow-cpu-paper"),
    _c("reproduce-paper-retrain-on-cpu", "reproduce --scale paper --retrain --device cpu", "--allow-cpu-paper"),
    _c("reproduce-device-meta", "reproduce --device meta", "--device"),
    _c("reproduce-unknown-scale", "reproduce --scale huge", "--scale"),
    _c("reproduce-retrain-cache-is-a-file", "reproduce --retrain --device cpu", "BWT_CACHE_DIR", cache="file"),
    # em-vs-sgd
    _c("em-seeds-zero", "em-vs-sgd --seeds 0", "--seeds"),
    _c("em-seeds-negative", "em-vs-sgd --seeds -1", "--seeds"),
    _c("em-seeds-huge", "em-vs-sgd --seeds 1000000000", "--seeds"),
    _c("em-steps-zero", "em-vs-sgd --steps 0", "--steps"),
    _c("em-steps-huge", "em-vs-sgd --steps 1000000000000", "--steps"),
    _c("em-steps-not-int", "em-vs-sgd --steps x", "--steps"),
    # cache
    _c("cache-unknown-action", "cache bogus", "action"),
    _c("cache-no-action", "cache", "action"),
    _c("cache-list-cache-is-a-file", "cache list", "BWT_CACHE_DIR", cache="file"),
    _c("cache-list-cache-under-a-file", "cache list", "BWT_CACHE_DIR", cache="under-file"),
    _c("cache-list-cache-name-with-newline", "cache list", "BWT_CACHE_DIR", cache="newline"),
    _c("info-cache-is-a-file", "info bijection transformer", "BWT_CACHE_DIR", cache="file"),
    _c("train-cache-name-with-newline", "train bijection mlp --steps 2", "BWT_CACHE_DIR", cache="newline"),
    _c("reproduce-capacity-retrain", "reproduce --capacity --retrain", "--retrain"),
]

# The functions through which the commands start work. In-process cases replace each with one that
# raises WorkStarted: a bad input must be refused before any of them is called.
WORK: tuple[tuple[str, str], ...] = (
    ("bwt_lite.cli.train_eval", "train_and_save"), ("bwt_lite.cli.train_eval", "load_or_train"),
    ("bwt_lite.cli.train_eval", "evaluate"), ("bwt_lite.cli.runs", "train_and_save"),
    ("bwt_lite.checkpoints", "train_and_save"), ("bwt_lite.checkpoints", "load_or_train"),
    ("bwt_lite.checkpoints", "fit"), ("bwt_lite.train", "fit"), ("bwt_lite.checkpoints", "fetch_checkpoint"),
    ("bwt_lite.orchestration.bench", "run"), ("bwt_lite.orchestration.bench", "steps_per_second"),
    ("bwt_lite.orchestration.bench", "benchmark_scan"),
    ("bwt_lite.dynamics.two_timescale", "em_vs_sgd"), ("bwt_lite.reproduce", "reproduce"), ("bwt_lite.reproduce", "load_or_train"),
    ("bwt_lite.orchestration.pool", "train_presets"),
)


class WorkStarted(BaseException):
    """A command reached a function that starts work (BaseException: no handler of the CLI catches it)."""


class CaseTimeout(BaseException):
    """The in-process case ran past :data:`TIMEOUT_S`."""


class StaleWork(Exception):
    """A name of :data:`WORK` no longer exists: a refactor moved it, so the cases would no longer stop work there."""


def check_work() -> None:
    """Raise :class:`StaleWork` naming every module or function of :data:`WORK` that is gone (or is no
    longer a function), before anything is patched."""
    import importlib

    stale = []
    for module_name, attr in WORK:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            stale.append(f"{module_name} (no such module)")
            continue
        if not callable(getattr(module, attr, None)):
            stale.append(f"{module_name}.{attr}")
    if stale:
        raise StaleWork(f"bad_inputs.WORK names what no longer exists: {', '.join(stale)}; update WORK to where "
                        f"the commands now start work")


@contextlib.contextmanager
def _no_work() -> Iterator[None]:
    import importlib

    check_work()  # all or nothing: a stale name fails every case, and nothing stays patched
    saved = []
    for module_name, attr in WORK:
        module = importlib.import_module(module_name)

        def refuse(*args, _where=f"{module_name}.{attr}", **kwargs):
            raise WorkStarted(_where)
        saved.append((module, attr, getattr(module, attr)))
        setattr(module, attr, refuse)
    try:
        yield
    finally:
        for module, attr, original in saved:
            setattr(module, attr, original)


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    """Raise CaseTimeout after ``seconds`` (SIGALRM: only in the main thread of a Unix process)."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise CaseTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _writable(folder: Path) -> bool:
    try:
        fd, path = tempfile.mkstemp(dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(path)
    return True


def cache_path(kind: str, tmp: Path) -> Path | None:
    """The ``BWT_CACHE_DIR`` of a case under ``tmp``; None when this machine cannot make that kind."""
    if kind == "ok":
        return tmp / "cache"
    if kind in ("file", "under-file"):
        f = tmp / "cache-file"
        f.write_text("not a folder\n")
        return f if kind == "file" else f / "sub"
    if kind == "unwritable":
        ro = tmp / "read-only"
        ro.mkdir(exist_ok=True)
        ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
        if not _writable(ro):
            return ro
        ro.chmod(stat.S_IRWXU)  # root writes anywhere: try a read-only system folder instead
        for other in (Path("/sys/fs"), Path("/proc/sys")):
            if other.is_dir() and not _writable(other):
                return other
        return None
    if kind == "deep":  # a path short enough to create, too long for the files written inside it
        path, target = tmp, 4096 - 100
        while target - len(str(path)) - 1 > 200:
            path = path / ("d" * 200)
        left = target - len(str(path)) - 1
        return path / ("d" * left) if left > 0 else path
    if kind == "long-name":  # one component past NAME_MAX (255)
        return tmp / ("x" * 300)
    if kind == "newline":  # as `export BWT_CACHE_DIR="$(cat file)"` can leave it
        return Path(f"{tmp / 'cache'}\n")
    raise ValueError(f"unknown cache kind {kind!r}")


def classify(name: str, rc: int | None, err: str, names: str, seconds: float, exc: str | None = None) -> Outcome:
    """Sort one finished case into :data:`KINDS` from its exit code, its stderr and an escaped exception."""
    if exc is not None or "Traceback" in err:
        return Outcome(name, "traceback", rc, seconds, (exc or err).strip().splitlines()[-1][:300])
    if rc == 0:
        return Outcome(name, "silent accept", rc, seconds, "exit code 0")
    lines = [line for line in err.splitlines() if "error:" in line]
    named = [line for line in lines if names in line]
    if named:
        return Outcome(name, "clean", rc, seconds, named[0])
    return Outcome(name, "unclear", rc, seconds, (lines or err.strip().splitlines() or ["(no output)"])[-1])


def run_case(case: Case, tmp: Path) -> Outcome:
    """Run one case in this process through ``bwt_lite.cli.main``; see the module docstring."""
    import torch

    from bwt_lite.cli import main

    check_work()  # a stale WORK fails the case loudly, not as one of its outcomes
    if case.needs_no_gpu and torch.cuda.is_available():
        return Outcome(case.name, "skipped", None, 0.0, "a CUDA GPU is visible here")
    tmp = Path(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    cache = cache_path(case.cache, tmp)
    if cache is None:
        return Outcome(case.name, "skipped", None, 0.0, f"no {case.cache} folder can be made here")
    out, err = io.StringIO(), io.StringIO()
    rc: int | None = None
    exc = None
    t0 = time.perf_counter()
    try:
        with _env("BWT_CACHE_DIR", str(cache)), _no_work(), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err), _time_limit(TIMEOUT_S):
            rc = main(list(case.argv))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except WorkStarted as e:
        return Outcome(case.name, "timeout", None, time.perf_counter() - t0, f"started work: {e}")
    except CaseTimeout:
        return Outcome(case.name, "timeout", None, time.perf_counter() - t0, f"still running after {TIMEOUT_S} s")
    except BaseException:  # anything else that escapes main is a traceback the user would see
        exc = traceback.format_exc()
    finally:
        if case.cache == "unwritable" and (tmp / "read-only").exists():
            (tmp / "read-only").chmod(stat.S_IRWXU)  # so the temporary folder can be removed
    return classify(case.name, rc, err.getvalue(), case.names, time.perf_counter() - t0, exc)


# ------------------------------------------------------------------------------------------------
# Subprocess cases: a signal, a closed pipe and a full disk need a real process and real file descriptors.


def _bwt(*args: str) -> list[str]:
    return [sys.executable, "-m", "bwt_lite.cli", *args]


def _env_for(tmp: Path) -> dict[str, str]:
    return {**os.environ, "BWT_CACHE_DIR": str(Path(tmp) / "cache"), "OMP_NUM_THREADS": "1"}


def _default_sigint() -> None:
    # a parent started in the background hands SIGINT down ignored; Python then never raises
    # KeyboardInterrupt. Restore the default so the child behaves as in a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def sigint_during_training(tmp: Path) -> Outcome:
    """Ctrl-C after the first periodic checkpoint: exit 130 and one line naming the resume folder."""
    name, tmp = "sigint-during-training", Path(tmp)
    argv = _bwt("train", "bijection", "mlp", "--steps", "100000", "--ckpt-every", "2", "--no-progress")
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env_for(tmp),
                            preexec_fn=_default_sigint)
    try:
        while time.perf_counter() - t0 < SUBPROCESS_TIMEOUT_S and proc.poll() is None:
            if any((tmp / "cache").glob("*/resume/step-*.json")):
                break
            time.sleep(0.05)
        else:
            proc.kill()
            out, err = proc.communicate()
            why = "exited" if proc.returncode is not None else "no periodic checkpoint"
            return Outcome(name, "timeout", proc.returncode, time.perf_counter() - t0, f"{why}: {err.strip()[-200:]}")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Outcome(name, "timeout", None, time.perf_counter() - t0, "still running after SIGINT")
    seconds = time.perf_counter() - t0
    if "Traceback" in err or proc.returncode == 0:
        return classify(name, proc.returncode, err, "", seconds)
    said = [line for line in err.splitlines() if "interrupted; the run resumes from" in line]
    if proc.returncode != 130 or not said:
        return Outcome(name, "unclear", proc.returncode, seconds,
                       f"expected exit code 130 and the resume line: {err.strip()[-200:]}")
    return Outcome(name, "clean", proc.returncode, seconds, said[0])


def _closed_pipe(name: str, tmp: Path, *args: str) -> Outcome:
    """The reader of standard output is gone before the command writes (``bwt ... | head -c1``):
    the command must stay quiet (no traceback, nothing on stderr) and exit 0 or 141."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(_bwt(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env_for(tmp))
    proc.stdout.close()  # no reader left: the first write gets EPIPE
    try:
        err = proc.stderr.read().decode(errors="replace")
        proc.wait(timeout=SUBPROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return Outcome(name, "timeout", None, time.perf_counter() - t0, "still running")
    finally:
        proc.stderr.close()
    seconds = time.perf_counter() - t0
    if "Traceback" in err or "Exception ignored" in err:
        return Outcome(name, "traceback", proc.returncode, seconds, err.strip().splitlines()[-1][:300])
    if proc.returncode not in (0, 141) or err.strip():
        return Outcome(name, "unclear", proc.returncode, seconds,
                       f"expected a quiet exit 0 or 141: {err.strip()[:200]}")
    return Outcome(name, "clean", proc.returncode, seconds, f"quiet, exit code {proc.returncode}")


def closed_pipe_json(tmp: Path) -> Outcome:
    return _closed_pipe("closed-pipe-json", tmp, "episode", "bijection", "--json")


def closed_pipe_text(tmp: Path) -> Outcome:
    return _closed_pipe("closed-pipe-text", tmp, "episode", "bijection")


def full_disk(tmp: Path) -> Outcome:
    """Standard output to a full disk (``> /dev/full``): one line on stderr and a non-zero exit code."""
    name = "stdout-full-disk"
    if not os.path.exists("/dev/full"):
        return Outcome(name, "skipped", None, 0.0, "no /dev/full here")
    t0 = time.perf_counter()
    with open("/dev/full", "w") as full:
        try:
            proc = subprocess.run(_bwt("episode", "bijection", "--json"), stdout=full, stderr=subprocess.PIPE,
                                  text=True, env=_env_for(tmp), timeout=SUBPROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Outcome(name, "timeout", None, time.perf_counter() - t0, "still running")
    outcome = classify(name, proc.returncode, proc.stderr, "No space left on device", time.perf_counter() - t0)
    if outcome.kind == "clean" and len(proc.stderr.strip().splitlines()) != 1:
        outcome.kind, outcome.detail = "unclear", f"expected one line on stderr, got: {proc.stderr.strip()[:300]}"
    return outcome


def _finished(tmp: Path) -> bool:
    """Whether the cache under ``tmp`` holds a finished checkpoint."""
    return any((tmp / "cache").glob("*/checkpoint.json"))


def closed_log_reader(tmp: Path) -> Outcome:
    """Training whose log reader goes away (``bwt train ... --log-every 1 2>&1 | head -n 3``): the run must
    reach its checkpoint, quietly (exit 0 or 141)."""
    name = "train-log-reader-closed"
    t0 = time.perf_counter()
    proc = subprocess.Popen(_bwt("train", "bijection", "mlp", "--steps", "40", "--log-every", "1", "--no-progress"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env_for(tmp))
    for _ in range(3):
        proc.stdout.readline()
    proc.stdout.close()  # `head -n 3` has what it wanted
    try:
        proc.wait(timeout=3 * SUBPROCESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return Outcome(name, "timeout", None, time.perf_counter() - t0, "still running")
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 141) or not _finished(tmp):
        return Outcome(name, "unclear", proc.returncode, seconds, "the run did not reach its checkpoint")
    return Outcome(name, "clean", proc.returncode, seconds, f"checkpoint written, exit code {proc.returncode}")


def stderr_full_disk(tmp: Path) -> Outcome:
    """Training with its log to a full disk (``2>/dev/full``): the run must still train and save."""
    name = "train-stderr-full-disk"
    if not os.path.exists("/dev/full"):
        return Outcome(name, "skipped", None, 0.0, "no /dev/full here")
    t0 = time.perf_counter()
    with open("/dev/full", "w") as full:
        try:
            proc = subprocess.run(_bwt("train", "bijection", "mlp", "--steps", "20", "--log-every", "1"),
                                  stdout=subprocess.DEVNULL, stderr=full, env=_env_for(tmp),
                                  timeout=3 * SUBPROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Outcome(name, "timeout", None, time.perf_counter() - t0, "still running")
    seconds = time.perf_counter() - t0
    if proc.returncode != 0 or not _finished(tmp):
        return Outcome(name, "unclear", proc.returncode, seconds, "the run did not reach its checkpoint")
    return Outcome(name, "clean", proc.returncode, seconds, "checkpoint written, exit code 0")


SUBPROCESS_CASES: tuple[Callable[[Path], Outcome], ...] = (sigint_during_training, closed_pipe_json,
                                                          closed_pipe_text, full_disk, closed_log_reader,
                                                          stderr_full_disk)


# ------------------------------------------------------------------------------------------------


def run_all() -> list[Outcome]:
    """Every case, each in its own temporary folder."""
    check_work()
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="bwt-bad-inputs-") as root:
        for i, case in enumerate(CASES):
            outcomes.append(run_case(case, Path(root) / f"{i:03d}"))
        for j, fn in enumerate(SUBPROCESS_CASES):
            folder = Path(root) / f"sub{j}"
            folder.mkdir()
            outcomes.append(fn(folder))
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    """``N cases: N clean, 0 tracebacks, 0 silent accepts, 0 timeouts`` (unclear and skipped when any)."""
    ran = [o for o in outcomes if o.kind != "skipped"]
    count = {k: sum(o.kind == k for o in ran) for k in KINDS}
    line = (f"{len(ran)} cases: {count['clean']} clean, {count['traceback']} tracebacks, "
            f"{count['silent accept']} silent accepts, {count['timeout']} timeouts")
    if count["unclear"]:
        line += f", {count['unclear']} unclear"
    skipped = len(outcomes) - len(ran)
    return line + (f" ({skipped} skipped)" if skipped else "")


def format_table(outcomes: list[Outcome]) -> str:
    width = max(len(o.name) for o in outcomes)
    lines = [f"{'case':<{width}}  {'outcome':<13}{'rc':>5}{'s':>7}  error line / detail", "-" * (width + 100)]
    for o in outcomes:
        rc = "-" if o.rc is None else str(o.rc)
        lines.append(f"{o.name:<{width}}  {o.kind:<13}{rc:>5}{o.seconds:>7.2f}  {o.detail[:110]}")
    return "\n".join(lines)


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON object: every outcome and the summary")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    outcomes = run_all()
    if args.json:
        print(json.dumps({"outcomes": [asdict(o) for o in outcomes], "summary": summary(outcomes),
                          "seconds": time.perf_counter() - t0}))
    else:
        print(format_table(outcomes))
        print(f"({time.perf_counter() - t0:.0f} s)")
        print(summary(outcomes))
    return 0 if all(o.kind in ("clean", "skipped") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(cli())
