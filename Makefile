# Two entry points: `make book` (build the book, executing every chapter) and `make test`.
# Both use the active virtual environment, or create ./.venv when none is active.
VENV ?= $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),.venv)
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.bwt-installed
export PATH := $(abspath $(BIN)):$(PATH)
export PYTHONHASHSEED := 0

.PHONY: venv book test bench notebooks clean constraints

venv: $(STAMP)

$(STAMP): requirements.txt constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt -c constraints.txt -e .
	touch $(STAMP)

book: venv
	$(BIN)/jupyter-book build . -W --keep-going

test: venv
	$(BIN)/python -m pytest -n 2 --dist loadfile --nbval-lax --nbval-current-env \
	    --nbval-cell-timeout=900 --nbval-sanitize-with tests/sanitize.cfg

bench: venv
	$(BIN)/bwt bench

# Maintainers: re-execute chapter notebooks in place (NB=chapters/03_*.ipynb for some), so the outputs
# that nbval compares are those of the shipped checkpoints. Uses an empty cache: shipped models only.
NB ?= chapters/[0-9][0-9]_*.ipynb
notebooks: venv
	BWT_CACHE_DIR=$$(mktemp -d) $(BIN)/python -c "$$EXECUTE_NOTEBOOKS" $(NB)

define EXECUTE_NOTEBOOKS
import sys, time, nbformat
from nbclient import NotebookClient
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    t0 = time.time()
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": "chapters"}}).execute()
    nbformat.write(nb, path)
    print(f"executed {path} in {time.time() - t0:.0f} s")
endef
export EXECUTE_NOTEBOOKS

# Re-pin the tested versions after changing requirements.txt (run inside a working venv).
constraints: venv
	$(BIN)/python -m pip freeze --exclude-editable | sed -e 's/+cpu$$//' > constraints.txt

clean:
	rm -rf _build
