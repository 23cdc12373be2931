# Two entry points: `make book` (build the book, executing every chapter) and `make test`.
# Both use the active virtual environment, or create ./.venv when none is active.
VENV ?= $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),.venv)
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.bwt-installed
export PATH := $(abspath $(BIN)):$(PATH)
export PYTHONHASHSEED := 0

.PHONY: venv book test bench clean constraints

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

# Re-pin the tested versions after changing requirements.txt (run inside a working venv).
constraints: venv
	$(BIN)/python -m pip freeze --exclude-editable | sed -e 's/+cpu$$//' > constraints.txt

clean:
	rm -rf _build
