"""tests/retry_stalls.py: a stalled chapter's record leaves the execution cache, so the retry runs it again."""
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import retry_stalls  # noqa: E402


def test_forget_drops_the_stalled_chapters_cache_record(tmp_path, monkeypatch):
    from jupyter_cache import get_cache

    root, build = tmp_path / "repo", tmp_path / "repo" / "_build"
    (root / "chapters").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1", execution_count=1, outputs=[
        nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)])])
    path = root / "chapters" / "01_x.ipynb"
    nbformat.write(nb, path)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("2 + 2")]), root / "chapters" / "02_y.ipynb")
    cache = get_cache(build / ".jupyter_cache")
    cache.cache_notebook_file(str(path), check_validity=False)
    assert len(cache.list_cache_records()) == 1
    monkeypatch.setattr(retry_stalls, "ROOT", root)
    monkeypatch.setattr(retry_stalls, "BUILD", build)
    retry_stalls.forget(["chapters/01_x", "chapters/02_y"])  # 02_y has no record: nothing to drop
    assert get_cache(build / ".jupyter_cache").list_cache_records() == []
