# make test: unit + browser tests (and the protobuf 4.21 and Colab jobs); make demo: a real profile
# in JupyterLab. Both install what they need: a venv in .venv, the package with its compiled
# kernels and JS bundles (both built by setup.py), a C compiler and Chromium from Debian when
# missing.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PB_VENV := .venv-pb421
COLAB_VENV := .venv-colab
COLAB_PY := $(COLAB_VENV)/bin/python
COLAB_PINS := tests/colab/pins.txt
COLAB_TOOLS := pytest hypothesis playwright
COLAB_TESTS := tests/unit/test_trace_viewer_widget.py tests/unit/test_profiler_suite.py \
  tests/unit/test_op_profile_widget.py tests/unit/test_request_widget.py \
  tests/unit/test_widget_reruns.py tests/unit/test_sql.py tests/unit/test_charts.py \
  tests/e2e/test_e2e_colab_classic.py
LOGDIR ?= demo_logdir
# Test processes: most of the suite waits on browsers, kernels and subprocesses, so two workers
# roughly halve it even on two cores; each test file stays on one worker.
TEST_WORKERS ?= 2
IS_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo yes)

.PHONY: test test-js test-pb-compat test-colab demo install chromium compiler

test: install chromium test-js test-pb-compat test-colab
	$(VENV)/bin/ruff check .
	XPROF_WIDGETS_REQUIRE_REFERENCES=1 $(PY) -m pytest tests -q -n $(TEST_WORKERS) --dist loadfile --durations=25

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY) compiler
	$(PY) -m pip install -q -e '.[test]'

# The kernels (xprof_widgets/_native/*.pyx) are compiled when the package is installed: that
# needs a C compiler and the interpreter's headers (pyenv's and python.org's builds ship them;
# Debian's python3 needs python3-dev). Cython itself comes through pip's build isolation.
compiler:
	@if ! command -v cc >/dev/null 2>&1 || ! $(PYTHON) -c "import os, sys, sysconfig; \
	    sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; \
	then \
	  if [ "$(IS_ROOT)" = yes ]; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc libc6-dev \
	      python3-dev; \
	  else \
	    echo "A C compiler or Python.h is missing: run 'apt-get install -y gcc python3-dev' as root"; \
	    exit 1; \
	  fi; \
	fi

chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$(IS_ROOT)" = yes ]; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	  else \
	    echo "Chromium is missing: run 'apt-get install -y chromium' as root (browser tests need it)"; \
	  fi; \
	fi

test-js:
	cd js && node --test --test-reporter=spec test/

# Colab pins an older protobuf: decoding must work on protobuf 4.21 too. Only the test files that
# use @pytest.mark.decoding are collected, so they may import numpy, pandas, protobuf, pytest,
# hypothesis and xprof_widgets' decoding modules, nothing else. The package is read from this
# tree, whose kernels `install` has just compiled in place for the same $(PYTHON).
test-pb-compat: install
	@[ -x $(PB_VENV)/bin/python ] || $(PYTHON) -m venv $(PB_VENV)
	$(PB_VENV)/bin/python -m pip install -q protobuf==4.21.12 numpy pandas pytest hypothesis
	@files=$$(grep -l 'pytest.mark.decoding' tests/unit/*.py 2>/dev/null); \
	if [ -z "$$files" ]; then \
	  echo "test-pb-compat: no test file uses @pytest.mark.decoding yet"; \
	else \
	  echo "protobuf $$($(PB_VENV)/bin/python -c 'import google.protobuf as p; print(p.__version__)')"; \
	  PYTHONPATH=$(CURDIR) $(PB_VENV)/bin/python -m pytest -q -p no:cacheprovider -m decoding \
	    $$files; \
	fi

# Colab's widget stack (docs/colab.md): its pins exactly (tests/colab/pins.txt), on this Python
# (3.11; Colab runs 3.13). The venv is made once and reused while the pins hold. The package goes
# in from its wheel (tests/wheel_cache.py, shared with test_wheel.py) as `pip install` puts it
# into Colab: first alone, then whatever it needs that is missing, and no pin may move. Then the
# unit tests that matter there, and the classic Notebook 6.5 in Chromium.
test-colab: chromium compiler
	@$(COLAB_PY) tests/colab/check_pins.py $(COLAB_PINS) 2>/dev/null || { \
	  [ -x $(COLAB_PY) ] || $(PYTHON) -m venv $(COLAB_VENV); \
	  $(COLAB_PY) -m pip install -q -r $(COLAB_PINS) $(COLAB_TOOLS); }
	@wheel=$$($(COLAB_PY) tests/wheel_cache.py) && \
	  $(COLAB_PY) -m pip install -q --no-deps --force-reinstall "$$wheel" && \
	  $(COLAB_PY) -m pip install -q "$$wheel"
	$(COLAB_PY) tests/colab/check_pins.py $(COLAB_PINS)
	$(COLAB_PY) -m pip check
	$(COLAB_VENV)/bin/pytest -q -p no:cacheprovider $(COLAB_TESTS)

demo: install
	@[ -d $(LOGDIR) ] || $(PY) -m xprof_widgets.demo $(LOGDIR)
	XPROF_DEMO_LOGDIR=$(abspath $(LOGDIR)) $(VENV)/bin/jupyter lab notebooks/quickstart.ipynb \
	  $(if $(IS_ROOT),--allow-root)
