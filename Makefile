# Two entry points: `make book` (build the book, executing every chapter) and `make test`.
# Both use the active virtual environment, or create ./.venv when none is active.
VENV ?= $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),.venv)
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.bwt-installed
export PATH := $(abspath $(BIN)):$(PATH)
export PYTHONHASHSEED := 0

.PHONY: venv book test check bench notebooks stress links release clean constraints mathjax lock

# Seconds one notebook cell may run in tests and in the book build before it fails: the slowest
# chapter cell takes under two minutes on 2 CPU cores, so a stalled kernel fails within minutes.
CELL_TIMEOUT := 300

# $(call timed,COMMAND,NAME): run COMMAND and record its wall time and exit code in
# _build/timings/NAME.json (read by `bwt bench`).
timed = @mkdir -p _build/timings; start=$$(date +%s); $(1); rc=$$?; \
	printf '{"seconds": %d, "exit_code": %d, "finished": "%s"}\n' $$(( $$(date +%s) - start )) $$rc \
	"$$(date -u +%FT%TZ)" > _build/timings/$(2).json; exit $$rc

venv: $(STAMP)

$(STAMP): requirements.txt constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt -c constraints.txt -e .
	touch $(STAMP)

# Before the chapters execute, the scorecard is computed once and saved in the cache (python -m bwt_lite.claims, bwt_lite/claims/saved.py):
# the scorecard page, the start page and every chapter's claim boxes read that one result, and no chapter
# cell waits on it.
# The book is executed through Jupyter Book's execution cache (_build/.jupyter_cache): a rebuild of
# unchanged chapters takes seconds. The cache is keyed by the notebooks' code only, so it is dropped
# whenever the package, the pinned versions or the build config change (the stamp below), together
# with Sphinx's saved environment, which would otherwise keep the pages of unchanged notebooks.
# A cell that runs longer than _config.yml's execute.timeout fails the build (a stalled kernel
# included), and tests/check_book.py then checks that every chapter really executed. A chapter that
# stalled (timed out, or took longer than one timeout) is built once more by tests/retry_stalls.py,
# which says so and records it in _build/timings/retries.json (check_book prints it again).
BOOK_INPUTS := $(shell find bwt_lite -name '*.py' -o -name '*.json' -o -name '*.safetensors' | sort) \
	constraints.txt _config.yml
book: venv
	@mkdir -p _build
	@cat $(BOOK_INPUTS) | sha256sum | cut -c1-16 > _build/.inputs.new
	@cmp -s _build/.inputs.new _build/.inputs || { rm -rf _build/.jupyter_cache _build/.doctrees; \
	    echo "package or config changed: chapters re-execute"; }
	@mv _build/.inputs.new _build/.inputs
	$(BIN)/python -m bwt_lite.claims
	$(call timed,$(BIN)/python tests/retry_stalls.py book,book)

# Stress check for kernel stalls: execute every chapter N times in a row (fails on the first timeout).
N ?= 3
stress: venv
	BWT_CACHE_DIR=$$(mktemp -d) $(BIN)/python tests/stress_notebooks.py --repeat $(N) $(NB)

# tests/retry_stalls.py runs pytest, and once more the notebooks that stalled when nothing else failed
# (printed as RETRIED and recorded in _build/timings/retries.json).
# Two pytest workers, each running notebooks in its own kernel: one compute thread per process
# (OMP_NUM_THREADS=1, inherited by the kernels), since two kernels of two threads each on two cores
# made chapter 6's evaluation of every shipped model run past the cell timeout (300 s against 25 s).
test: venv
	$(BIN)/python -m bwt_lite.claims
	$(call timed,OMP_NUM_THREADS=1 $(BIN)/python tests/retry_stalls.py test -n 2 --dist loadfile --nbval-lax \
	    --nbval-current-env --nbval-cell-timeout=$(CELL_TIMEOUT) --durations=10 \
	    --nbval-sanitize-with=tests/sanitize.cfg,test)

# The unit tests alone (tests/, no chapter executed), a few minutes: what .github/workflows/check.yml runs on
# every push. `make test` (the chapters too) is what CI and a submission must pass.
check: venv
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest tests -n 2 --dist loadfile -p no:nbval --durations=5

# The recipe lockfile (docs/recipes.lock.json): every preset resolved; tests/test_recipe_lock.py fails when
# a recipe table changes without it. Write it again after an intended change.
lock: venv
	$(BIN)/python -m bwt_lite.recipe_lock

bench: venv
	$(BIN)/bwt bench

# Maintainers: re-execute chapter notebooks in place (NB=chapters/03_*.ipynb for some), so the outputs
# that nbval compares are those of the shipped checkpoints. Uses an empty cache: shipped models only.
NB ?= chapters/[0-9][0-9]_*.ipynb
notebooks: venv
	dir=$$(mktemp -d); BWT_CACHE_DIR=$$dir $(BIN)/python -m bwt_lite.claims && \
	    BWT_CACHE_DIR=$$dir $(BIN)/python -c "$$EXECUTE_NOTEBOOKS" $(NB)

define EXECUTE_NOTEBOOKS
import sys, time, nbformat
from nbclient import NotebookClient
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    t0 = time.time()
    NotebookClient(nb, timeout=$(CELL_TIMEOUT), kernel_name="python3", resources={"metadata": {"path": "chapters"}}).execute()
    nbformat.write(nb, path)
    print(f"executed {path} in {time.time() - t0:.0f} s")
endef
export EXECUTE_NOTEBOOKS

# Maintainers: where the book and package are published is one setting, repository.url in
# _config.yml; `make links` rewrites the chapters' Colab badges and install cells from it.
links: venv
	$(BIN)/python -m bwt_lite.release links

# Maintainers: build a release into dist/: the wheel (with the shipped lite checkpoints), the
# paper checkpoints found in the cache and dist/registry.json with their SHA-256. It prints what
# remains to do outside this machine (push the version tag, upload the assets).
release: venv
	$(BIN)/python -m bwt_lite.release build

# Re-pin the tested versions after changing requirements.txt (run inside a working venv).
constraints: venv
	$(BIN)/python -m pip freeze --exclude-editable | sed -e 's/+cpu$$//' > constraints.txt

clean:
	rm -rf _build

# Maintainers: refresh the copy of MathJax that ships with the book (book/assets/mathjax, copied into
# the build's _static by Sphinx; _config.yml's mathjax_path points at it), so pages typeset math with
# no network. Takes the pinned release from the npm registry (npm pack, which checks the registry's
# integrity hash): the combined TeX component, its fonts and the TeX extensions it loads on demand.
MATHJAX_VERSION := 3.2.2
mathjax:
	rm -rf _build/mathjax && mkdir -p _build/mathjax
	cd _build/mathjax && npm pack --silent mathjax@$(MATHJAX_VERSION) && tar xzf mathjax-$(MATHJAX_VERSION).tgz
	rm -rf book/assets/mathjax && mkdir -p book/assets/mathjax/output/chtml/fonts book/assets/mathjax/input/tex
	cp _build/mathjax/package/es5/tex-mml-chtml.js _build/mathjax/package/LICENSE book/assets/mathjax/
	cp -r _build/mathjax/package/es5/output/chtml/fonts/woff-v2 book/assets/mathjax/output/chtml/fonts/
	cp -r _build/mathjax/package/es5/input/tex/extensions book/assets/mathjax/input/tex/
	echo $(MATHJAX_VERSION) > book/assets/mathjax/VERSION
