# make test: unit + browser tests (and the protobuf 4.21 decoding job); make demo: a real profile
# in JupyterLab. Both install what they need: a venv in .venv, the package with its JS bundles
# (built by the hatch hook, see hatch_build.py), Chromium from Debian when missing.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PB_VENV := .venv-pb421
LOGDIR ?= demo_logdir
IS_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo yes)

.PHONY: test test-js test-pb-compat demo install chromium

test: install chromium test-js test-pb-compat
	$(VENV)/bin/ruff check .
	$(PY) -m pytest tests -q

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	$(PY) -m pip install -q -e '.[test]'

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
# use @pytest.mark.decoding are collected, so they may import numpy, pandas, numba, protobuf,
# pytest, hypothesis and xprof_widgets' decoding modules, nothing else.
test-pb-compat: install
	@[ -x $(PB_VENV)/bin/python ] || $(PYTHON) -m venv $(PB_VENV)
	$(PB_VENV)/bin/python -m pip install -q protobuf==4.21.12 numpy pandas numba pytest hypothesis
	XPROF_WIDGETS_SKIP_JS=1 $(PB_VENV)/bin/python -m pip install -q --no-deps -e .
	@files=$$(grep -l 'pytest.mark.decoding' tests/unit/*.py 2>/dev/null); \
	if [ -z "$$files" ]; then \
	  echo "test-pb-compat: no test file uses @pytest.mark.decoding yet"; \
	else \
	  echo "protobuf $$($(PB_VENV)/bin/python -c 'import google.protobuf as p; print(p.__version__)')"; \
	  $(PB_VENV)/bin/python -m pytest -q -p no:cacheprovider -m decoding $$files; \
	fi

demo: install
	@[ -d $(LOGDIR) ] || $(PY) -m xprof_widgets.demo $(LOGDIR)
	XPROF_DEMO_LOGDIR=$(abspath $(LOGDIR)) $(VENV)/bin/jupyter lab notebooks/quickstart.ipynb \
	  $(if $(IS_ROOT),--allow-root)
