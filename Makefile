# dfcore: one-command set-up, tests, lessons and benchmarks.
#   make test       set up .venv (once), lint, and run the whole test suite: unit tests, doctests, the lessons
#                   under nbval, and the browser smoke tests (JupyterLab and static HTML in headless Chromium)
#   make lint       ruff's linter (never `ruff format`) and mypy, as configured in pyproject.toml
#   make lab        set up .venv (once) and open the lessons in JupyterLab on 127.0.0.1
#   make notebooks  re-run every lesson in place and strip its widget state (do this before committing one)
#   make notebooks-portable  the lessons under nbval with another BLAS kernel (OpenBLAS's Prescott, x86-64): a
#                   checked cell must print the same on any processor, not only on the one that ran `make notebooks`
#   make html       export every lesson to build/html/ (executed, widget state kept: steps without a kernel;
#                   each widget's static picture shows where the widget renderer cannot load)
#   make book       the course as a website in build/book/ (docs/book/): the committed lessons (never executed),
#                   their solutions and the API reference, readable offline; installs the book extra (once)
#   make bench      set up .venv (once) and print the performance ratios
#   make test-gpu   on a machine with a CUDA GPU: install the gpu extra (cupy) and run tests/gpu (each test is
#                   skipped, with the reason, without cupy or a GPU); `make bench BENCH=gpu` prints the GPU ratios
#   make protos     regenerate the *_pb2.py(i) of dfcore's .proto files (TF messages tensorboard lacks) with grpcio-tools
#   make soak       chaos soak: train PS and ring all-reduce MPI jobs while killing ranks (SOAK_S seconds, 600)
#   make binder-check  build Binder's environment from binder/ alone and run every lesson in it under nbval
# Everything runs non-interactively (CI=true, no stdin).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-lab-test-mpi
# set before the rules that name it (make expands a rule's prerequisites when it reads the rule)
BOOK_STAMP := $(VENV)/.installed-book
PIP    := $(PY) -m pip --disable-pip-version-check --no-input -qq

# Each test may run at most this long before pytest-timeout fails it (a hang must not eat CI's time).
TEST_TIMEOUT_S ?= 600
LESSONS        := $(sort $(wildcard notebooks/*.ipynb))
NOTEBOOKS      := $(sort $(wildcard notebooks/*.ipynb notebooks/solutions/*.ipynb))
NBVAL_CELL_TIMEOUT_S ?= 300
NBVAL_ARGS     := $(if $(NOTEBOOKS),--nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
                  --nbval-cell-timeout=$(NBVAL_CELL_TIMEOUT_S) $(NOTEBOOKS))
PYTEST_ARGS    ?=
SOAK_S         ?= 600

# The browser tests: Debian's chromium, and pinned copies of what nbconvert's HTML export loads from
# CDNs (the widget renderer and require.js), packed from the npm registry so the test runs offline.
CHROMIUM             := /usr/bin/chromium
VENDOR               := tests/browser/vendor
HTML_MANAGER_VERSION := 1.0.15
REQUIREJS_VERSION    := 2.3.7
VENDOR_STAMP         := $(VENDOR)/.html-manager-$(HTML_MANAGER_VERSION)-requirejs-$(REQUIREJS_VERSION)

LAB_PORT ?= 8888
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: setup system-deps browser-deps lint test test-gpu notebooks notebooks-portable html book lab bench soak binder-check protos clean

setup: $(STAMP) system-deps browser-deps

# The venv and the editable install: redone only when pyproject.toml changes (or .venv is gone).
$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "Creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "Installing dfcore (editable) with extras lab,test,mpi into $(VENV)"
	@$(PIP) install --progress-bar off --upgrade pip
	@$(PIP) install --progress-bar off -e '.[lab,test,mpi]'
	@touch $@

# $(call apt_install,<check>,<Debian package>,<what is missing without it>): as root with apt-get,
# install the package when <check> fails; otherwise say what is missing and how to install it.
define apt_install
	@if ! $(1); then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's $(2)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && apt-get install -y -qq $(2) >/dev/null \
	      || { echo "error: apt-get install $(2) failed" >&2; exit 1; }; \
	  else \
	    echo "note: $(3)"; \
	    echo "      Install it with: sudo apt-get update && sudo apt-get install -y $(2)"; \
	  fi; \
	fi
endef

# Debian's graphviz provides `dot`, which the widgets use to lay out graphs.
system-deps:
	$(call apt_install,command -v dot >/dev/null 2>&1,graphviz,the 'dot' program is missing; graph pictures fall back to DOT text and the tests that render with it will be skipped (and fail in CI).)

# Debian's chromium for the browser tests (driven by Playwright's Python package; never `playwright install`).
browser-deps: $(VENDOR_STAMP)
	$(call apt_install,[ -x $(CHROMIUM) ],chromium,$(CHROMIUM) is missing; the browser tests will be skipped (and fail in CI).)

$(VENDOR_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
	  echo "Packing @jupyter-widgets/html-manager@$(HTML_MANAGER_VERSION) and requirejs@$(REQUIREJS_VERSION) into $(VENDOR)"; \
	  tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  timeout 300 npm pack --silent --pack-destination "$$tmp" \
	    @jupyter-widgets/html-manager@$(HTML_MANAGER_VERSION) requirejs@$(REQUIREJS_VERSION) >/dev/null && \
	  rm -rf $(VENDOR) && mkdir -p $(VENDOR)/html-manager $(VENDOR)/requirejs && \
	  tar xzf "$$tmp/jupyter-widgets-html-manager-$(HTML_MANAGER_VERSION).tgz" -C $(VENDOR)/html-manager \
	    --strip-components=1 package/dist package/package.json && \
	  tar xzf "$$tmp/requirejs-$(REQUIREJS_VERSION).tgz" -C $(VENDOR)/requirejs \
	    --strip-components=1 package/require.js package/package.json && \
	  touch $@ || echo "warning: could not pack the widget renderer from the npm registry;" \
	    "the static-export browser test will be skipped (and fail in CI)." >&2; \
	else \
	  echo "note: npm is missing; the static-export browser test will be skipped (and fail in CI)."; \
	fi

# The code health checks: ruff's linter over the repository (notebooks/ and the vendored renderer excluded)
# and mypy over dfcore/ and widgets/. `make test` runs them first.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: setup $(BOOK_STAMP) lint
	$(PY) -m pytest --timeout=$(TEST_TIMEOUT_S) tests/unit tests/notebooks tests/browser --doctest-modules dfcore \
	  --durations=25 $(NBVAL_ARGS) $(PYTEST_ARGS)

# Real-GPU checks (docs/architecture.md#devices-and-array-backends): cupy for CUDA 12 from the gpu extra, then
# tests/gpu. `make test` never collects tests/gpu; the unit tests simulate every GPU (tests/unit/conftest.py sets
# DFCORE_SIMULATED_GPUS=1).
GPU_STAMP := $(VENV)/.installed-gpu
GPU_TEST_TIMEOUT_S ?= 240
$(GPU_STAMP): $(STAMP)
	@echo "Installing the gpu extra (cupy for CUDA 12, array-api-compat) into $(VENV)"
	@$(PIP) install --progress-bar off -e '.[lab,test,mpi,gpu]'
	@touch $@

test-gpu: $(GPU_STAMP)
	$(PY) -m pytest -p no:cacheprovider --timeout=$(GPU_TEST_TIMEOUT_S) -v -rs tests/gpu $(PYTEST_ARGS)

# Run each lesson top to bottom in place (outputs are committed), then strip its widget state.
notebooks: setup
	$(if $(LESSONS),$(PY) tests/notebooks/strip_widget_state.py --execute $(LESSONS),@echo "no lessons in notebooks/")

# A matrix product's last bits follow the BLAS kernel picked for the processor; a chaotic run (large steps on
# stale gradients) amplifies them, so CI on another processor can print other digits than `make notebooks` stored.
notebooks-portable: setup
	OPENBLAS_CORETYPE=Prescott $(PY) -m pytest -p no:cacheprovider $(NBVAL_ARGS)

# The template (tools/nbconvert/dfcore_lab) is JupyterLab's plus each widget's static picture, shown until the
# widget renderer (loaded from a CDN) draws the live widget in its place.
html: setup
	@mkdir -p build/html
	$(if $(LESSONS),cd notebooks && ../$(PY) -m nbconvert --to html --execute \
	  --ExecutePreprocessor.store_widget_state=True --TemplateExporter.extra_template_basedirs=../tools/nbconvert \
	  --template dfcore_lab --output-dir ../build/html $(notdir $(LESSONS)),@echo "no lessons in notebooks/")

# The course website (docs/book/build.py): Sphinx with myst-nb and sphinx-book-theme, from a staged copy of
# notebooks/ in build/book-src/, warnings as errors. tests/browser/test_book.py builds it and reads every lesson.
$(BOOK_STAMP): $(STAMP)
	@echo "Installing the book extra (Sphinx, myst-nb, sphinx-book-theme, sphinx-external-toc) into $(VENV)"
	@$(PIP) install --progress-bar off -e '.[lab,test,mpi,book]'
	@touch $@

book: $(BOOK_STAMP)
	$(PY) docs/book/build.py --out build/book

lab: setup
	@mkdir -p notebooks
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --port=$(LAB_PORT) --ServerApp.root_dir=notebooks $(ROOT_FLAG)

# BLAS pinned to one thread; OPENBLAS_CORETYPE/L2_SIZE unset so current numpy picks its own kernel.
bench: setup
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(PY) tests/benchmarks/run_all.py $(BENCH)

# Not part of `make test`: CI runs a 2-minute soak (SOAK_S=120) after it.
soak: setup
	$(PY) tests/soak/run_soak.py --duration-s $(SOAK_S)

# Binder parity: what binder/ installs must import everything the lessons import (CI runs it after `make test`).
binder-check: system-deps
	$(PYTHON) tests/binder/check_binder.py

# TF's messages tensorboard lacks (Example, QueueRunnerDef: TF's packages and field numbers), compiled for the
# protobuf runtime pyproject.toml asks for.
PROTOS := $(sort $(wildcard dfcore/framework/tf_protos/*.proto))
# tensorboard ships its TF messages compiled only: their descriptors go to protoc as a descriptor set.
protos: $(STAMP)
	@mkdir -p build
	$(PY) tools/tensorboard_descriptors.py build/tensorboard_protos.pb
	$(PY) -m grpc_tools.protoc -I. --descriptor_set_in=build/tensorboard_protos.pb --python_out=. --pyi_out=. $(PROTOS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache $(VENDOR) tests/browser/screenshots
