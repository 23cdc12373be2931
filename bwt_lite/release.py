"""Publishing (maintainers): where the book and the package live, and what a release builds.

One setting says where everything is published: ``repository.url`` in ``_config.yml``. Jupyter
Book's Colab launch buttons read it directly; the chapters' "Open in Colab" badges and install cells
are written from it by :func:`sync_links` (``make links``), and a test fails when they drift. So
moving the repository is a one-line change followed by ``make links``.

A release (``make release``) builds into ``dist/``:

- the wheel, checked to hold every shipped lite checkpoint (:func:`build_wheel`);
- for every paper preset with a finished checkpoint in the cache, its two files under
  ``dist/paper-checkpoints/<preset>/`` and a ``registry.json`` with their URLs (the release's assets
  on the repository), SHA-256 and sizes, ready for :data:`bwt_lite.store.hosted.REGISTRY`
  (:func:`paper_checkpoints`).

What stays outside this machine: pushing the ``v<version>`` tag (the install cells install from it),
uploading the paper checkpoints as that release's assets, and publishing the built book.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import asdict
from pathlib import Path

import yaml

from .paths import CHECKOUT, DATA_DIR
from .llm.text_lm import FILES as TEXT_LM_FILES
from .llm.text_lm import SHIPPED as TEXT_LM
from .models import ARCHS
from .recipes import Preset, get_preset, shipped_presets
from .store.cache import META, WEIGHTS, checkpoint_dir
from .store.checkpoint import find_checkpoint
from .store.hosted import registry_entry
from .tunnels import TUNNELS
from .version import __version__

ROOT = CHECKOUT  # the source checkout (releases are built from one)
COLAB = "https://colab.research.google.com"
CHAPTER_GLOB = "chapters/[0-9][0-9]_*.ipynb"

# The two places in a chapter that name the repository (its first two cells).
BADGE = re.compile(r"\(https://colab\.research\.google\.com/github/[^)\s]+\)")
INSTALL = re.compile(r'"bwt-lite @ git\+[^"\s]+"')


GITHUB_REPO = re.compile(r"https://github\.com/[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")


def repository_url(root: Path = ROOT) -> str:
    """The one setting: ``repository.url`` of ``_config.yml``, without a trailing slash. It is written into
    every chapter's code, so it must be exactly ``https://github.com/OWNER/REPO`` (letters, digits, ``-``,
    ``_`` and ``.``): no quotes, spaces or other characters. Anything else is a ValueError naming the file."""
    path = root / "_config.yml"
    try:
        config = yaml.safe_load(path.read_text())
        url = config["repository"]["url"]
    except yaml.YAMLError as e:
        raise ValueError(f"{path} is not valid YAML ({e})") from None
    except (KeyError, TypeError):
        raise ValueError(f"{path} has no repository.url (the repository the book is published from)") from None
    except OSError as e:
        raise ValueError(f"{path} cannot be read ({e.strerror or e})") from None
    url = str(url).rstrip("/")
    if not GITHUB_REPO.fullmatch(url) or url.endswith((".", ".git")):
        raise ValueError(f"{path}: repository.url must be https://github.com/OWNER/REPO (letters, digits, '-', '_' "
                         f"and '.'), got {url!r}")
    return url


def install_spec(repo: str, version: str = __version__) -> str:
    """What a chapter's install cell asks pip for: this repository at the book's version tag."""
    return f"bwt-lite @ git+{repo}@v{version}"


def colab_url(repo: str, notebook: str) -> str:
    """The "Open in Colab" address of ``notebook`` (a path inside the repository)."""
    return f"{COLAB}/github/{repo.removeprefix('https://github.com/')}/blob/main/{notebook}"


def sync_links(root: Path = ROOT, *, write: bool = True) -> list[Path]:
    """Rewrite every chapter's badge and install spec from the setting; the chapters that changed.

    With ``write=False`` nothing is written: the result lists the chapters that are out of date.
    """
    repo = repository_url(root)
    changed = []
    for path in sorted(root.glob(CHAPTER_GLOB)):
        nb = json.loads(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root).as_posix()
        dirty = False
        for cell in nb["cells"]:
            old = "".join(cell["source"])
            new = INSTALL.sub(f'"{install_spec(repo)}"', BADGE.sub(f"({colab_url(repo, rel)})", old))
            if new != old:
                cell["source"], dirty = new.splitlines(keepends=True), True
        if dirty:
            changed.append(path)
            if write:
                path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def build_wheel(dest: Path, root: Path = ROOT) -> Path:
    """Build the package's wheel into ``dest`` and check that it holds every shipped checkpoint."""
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.glob("*.whl"))
    # No build isolation: the environment's setuptools (torch needs a recent one) builds it, so a
    # release needs no download.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "--disable-pip-version-check", "-w", str(dest), str(root)], check=True)
    wheels = sorted(set(dest.glob(f"bwt_lite-{__version__}-*.whl")) - before) or sorted(
        dest.glob(f"bwt_lite-{__version__}-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip wheel wrote no bwt_lite-{__version__} wheel into {dest}")
    wheel = wheels[-1]
    missing = missing_checkpoints(wheel)
    if missing:
        raise RuntimeError(f"{wheel.name} lacks shipped checkpoint files: {', '.join(missing)}")
    return wheel


def missing_checkpoints(wheel: Path) -> list[str]:
    """Shipped checkpoint files (``bwt_lite/data/checkpoints/<name>/...``, and the text model's under
    ``bwt_lite/data/lm/``) and the result files the chapters read (``bwt_lite/data/*.json``: the seed
    tables and the capacity sweep) that ``wheel`` does not hold."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    missing = []
    for preset in shipped_presets():
        folder = f"bwt_lite/data/checkpoints/{checkpoint_dir(preset, Path('.')).name}"
        missing += [f"{folder}/{f}" for f in (WEIGHTS, META) if f"{folder}/{f}" not in names]
    lm = f"bwt_lite/data/lm/{TEXT_LM.name}"  # chapter 12's model trained on Shakespeare
    missing += [f"{lm}/{f}" for f in (*TEXT_LM_FILES, "meta.json") if f"{lm}/{f}" not in names]
    data = [f"bwt_lite/data/{f.name}" for f in sorted(DATA_DIR.glob("*.json"))]
    missing += [f for f in data if f not in names]
    return missing


def release_url(repo: str, version: str = __version__) -> str:
    """Where a release's assets are downloaded from."""
    return f"{repo}/releases/download/v{version}"


def paper_presets() -> list[Preset]:
    """The paper-scale recipe of every tunnel and architecture that has one: what a release may publish."""
    presets = []
    for tunnel in TUNNELS:
        for arch in ARCHS:
            try:
                presets.append(get_preset(tunnel, arch, "paper"))
            except (KeyError, ValueError):  # no paper recipe for this pair
                pass
    return presets


def paper_checkpoints(dest: Path, root: Path = ROOT) -> dict[str, dict]:
    """Copy every finished paper checkpoint in the cache to ``dest``; their registry entries by preset.

    An asset is named ``<preset>.<file>`` (a release's assets live in one folder).
    """
    base = release_url(repository_url(root))
    entries: dict[str, dict] = {}
    for preset in paper_presets():
        name = preset.name
        found = find_checkpoint(preset)
        if found is None:
            continue
        out = dest / name
        out.mkdir(parents=True, exist_ok=True)
        for f in (WEIGHTS, META):
            shutil.copyfile(found / f, out / f)
        entry = registry_entry(out, base)
        entries[name] = {
            "key": entry.key,
            "weights": {**asdict(entry.weights), "url": f"{base}/{name}.{WEIGHTS}"},
            "meta": {**asdict(entry.meta), "url": f"{base}/{name}.{META}"},
        }
    return entries


def release(dest: Path, root: Path = ROOT) -> dict:
    """Everything a release needs, built into ``dest``; a summary of what was built."""
    out_of_date = sync_links(root, write=False)
    if out_of_date:
        raise RuntimeError("chapters name another repository than _config.yml: run `make links` first "
                           f"({', '.join(p.name for p in out_of_date)})")
    wheel = build_wheel(dest, root)
    entries = paper_checkpoints(dest / "paper-checkpoints", root)
    (dest / "registry.json").write_text(json.dumps(entries, indent=1) + "\n")
    return {"version": __version__, "wheel": str(wheel), "paper_checkpoints": sorted(entries),
            "registry": str(dest / "registry.json"), "install_spec": install_spec(repository_url(root)),
            "tag": f"v{__version__}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwt_lite.release", description="publishing (maintainers)")
    ap.add_argument("action", choices=("links", "check-links", "build"))
    ap.add_argument("--dest", type=Path, default=ROOT / "dist")
    args = ap.parse_args(argv)
    try:
        repository_url()
    except ValueError as e:  # one line naming the file, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.action in ("links", "check-links"):
        changed = sync_links(write=args.action == "links")
        verb = "rewrote" if args.action == "links" else "out of date:"
        print(f"{verb} {len(changed)} chapter(s) for {repository_url()}" +
              "".join(f"\n  {p.relative_to(ROOT)}" for p in changed))
        return 1 if changed and args.action == "check-links" else 0
    summary = release(args.dest)
    print(json.dumps(summary, indent=1))
    print(f"built {Path(summary['wheel']).name}; {len(summary['paper_checkpoints'])} paper checkpoint(s).\n"
          f"Outside this machine: push the tag {summary['tag']} (`git tag {summary['tag']} && git push origin "
          f"{summary['tag']}`), upload dist/paper-checkpoints/*/ as that release's assets named "
          f"<preset>.<file>, and paste dist/registry.json's entries into bwt_lite/store/hosted.py.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
