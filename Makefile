# ddb-traffic-auditor: `make demo` and `make test` are the two set-up commands.
# Each creates (or reuses) .venv and installs what it needs.

PYTHON     ?= python3
VENV       ?= .venv
BIN        := $(VENV)/bin
PIP_FLAGS  := --quiet --disable-pip-version-check
DEV_STAMP  := $(VENV)/.installed-dev
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: venv test lint typecheck unit unit-compiled docs fast demo wheel-check bench bench-lambda bench-stages clean \
        tools template-check build fuzz

# Two installs of the project into one .venv, both pure Python, exactly what the Lambda functions run (setup.py
# compiles nothing unless DDB_AUDIT_COMPILE=1): `make demo` the runtime and the demo extra only (no dev tools, no
# bytecode written ahead: only what the demo imports is compiled, as it runs), every other target the dev extra,
# which holds the demo's too (so `make demo` after them installs nothing).
define install
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(strip $(PIP_FLAGS) $(2)) -e '.[$(1)]'
endef

$(DEMO_STAMP): pyproject.toml setup.py
	$(call install,demo,--no-compile)
	@touch $@

$(DEV_STAMP): pyproject.toml setup.py
	$(call install,dev)
	@touch $@ $(DEMO_STAMP)

venv: $(DEV_STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy

# The whole suite on the default (pure Python) install, then the CloudTrail kernel's tests (tests/kernel) again with
# the kernel compiled by mypyc (the opt-in of `make fast`), in a copy of the tree so that .venv stays pure.
unit: venv
	$(BIN)/pytest -q

KERNEL_COPY := build/kernel-compiled
unit-compiled: venv
	@rm -rf $(KERNEL_COPY) && mkdir -p $(KERNEL_COPY)
	@cp -R auditor handlers tests benchmarks events examples pyproject.toml setup.py README.md LICENSE template.yaml \
		$(KERNEL_COPY)/
	@find $(KERNEL_COPY) -name __pycache__ -prune -exec rm -rf {} +
	cd $(KERNEL_COPY) && DDB_AUDIT_COMPILE=1 $(abspath $(BIN))/python setup.py --quiet build_ext --inplace
	cd $(KERNEL_COPY) && DDB_AUDIT_EXPECT_COMPILED=1 $(abspath $(BIN))/python -m pytest -q -p no:cacheprovider tests/kernel

# The documentation site (mkdocs.yml, docs/): every page and link must resolve (without the theme's banner).
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet -d build/site

test: lint typecheck unit unit-compiled template-check docs

# Opt-in: compile the CloudTrail kernel (auditor/kernel) with mypyc, in place, for a faster `ddb-audit analyze-trail`
# (again after pulling changes to the kernel; a plain `pip install -e .` goes back to pure Python). The dev extra
# holds the build requirements, so the build runs in .venv (mypyc needs its mypy).
fast: venv
	DDB_AUDIT_COMPILE=1 $(BIN)/python -m pip install $(PIP_FLAGS) --no-build-isolation -e '.[dev]'

# The demo is an optional extra (moto is no runtime dependency): `make demo` installs the runtime and `.[demo]`.
demo: $(DEMO_STAMP)
	$(BIN)/ddb-audit demo --out audit-demo

# The package as a user installs it: `python -m build` makes the sdist and then the wheel from the sdist (so the
# sdist holds all the build needs); the wheel with the demo extra goes into a new venv without any dev tool, where
# `ddb-audit --version` and `ddb-audit demo` run (outside the source tree, which must not be imported). It is built
# in a clone holding the checkout's tracked files as they are now (git gives the version and the file list), since
# a pure build removes the compiled kernel of `make fast` from the tree it runs in.
wheel-check: venv
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	git clone -q . "$$tmp/src"; \
	git diff --quiet HEAD || git diff --binary HEAD | git -C "$$tmp/src" apply --index; \
	$(BIN)/python -m build --outdir "$$tmp/dist" "$$tmp/src" >"$$tmp/build.log" 2>&1 \
		|| { cat "$$tmp/build.log"; exit 1; }; \
	ls "$$tmp"/dist; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install $(PIP_FLAGS) --no-compile "$$(echo "$$tmp"/dist/*.whl)[demo]"; \
	cd "$$tmp"; \
	for tool in mypy ruff pytest hypothesis duckdb; do \
		if venv/bin/python -c "import $$tool" 2>/dev/null; then echo "wheel-check: $$tool is installed" >&2; exit 1; fi; \
	done; \
	venv/bin/ddb-audit --version; \
	venv/bin/ddb-audit demo --out "$$tmp/demo" >"$$tmp/demo.log" 2>&1 || { cat "$$tmp/demo.log"; exit 1; }; \
	tail -n 3 "$$tmp/demo.log"; \
	echo "wheel-check: the wheel installs with [demo] and runs the demo without dev tools"

bench: venv
	$(BIN)/python -m benchmarks.ingest

# The trail-ingest handler on a moto server: CPU, memory, GB-seconds and dollars per million records.
bench-lambda: venv
	$(BIN)/python -m benchmarks.lambda_path

bench-stages: venv
	$(BIN)/python -m benchmarks.stages

# The long fuzz run (make test runs the same suite with fewer examples, about a minute), then the figures in the
# hostile-input table form (child process per case: crashes, hangs, exit codes, lost records, peak memory).
fuzz: venv
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -q tests/fuzz
	$(BIN)/python -m tests.fuzz.measure --cases 500

clean:
	rm -rf $(VENV) $(TOOLS) .aws-sam .mypy_cache .ruff_cache .pytest_cache audit-demo benchmarks/.data build dist
	find auditor -name '*.so' -delete && rm -f ddb_traffic_auditor__mypyc.*.so

# ---- template.yaml: checks and packaging --------------------------------------------------------------------
# SAM CLI and checkov pin boto3/pydantic/cfn-lint versions that clash with .venv (and with each other), so each
# gets its own venv under $(TOOLS) (gitignored), created once and reused; bumping a version rebuilds them.
TOOLS           ?= .venv-tools
SAM_VERSION     ?= 1.170.0
CHECKOV_VERSION ?= 3.3.30
SAM             := $(TOOLS)/sam/bin/sam
CHECKOV         := $(TOOLS)/checkov/bin/checkov
TOOLS_STAMP     := $(TOOLS)/.installed-sam-$(SAM_VERSION)-checkov-$(CHECKOV_VERSION)
# sam validate needs a region (any: the template is region-independent); no credentials, no telemetry.
SAM_ENV         := AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0
# The template uses AWS::LanguageExtensions (Fn::ForEach: one stream event source per opted-in table); SAM CLI
# only reads it with this flag (samconfig.toml sets it for sam deploy/package/sync). The built template keeps the
# loop: CloudFormation expands it at deploy time with the real parameter values.
SAM_FLAGS       := --language-extensions

$(TOOLS_STAMP):
	@rm -rf $(TOOLS)/sam $(TOOLS)/checkov $(TOOLS)/.installed-*
	$(PYTHON) -m venv $(TOOLS)/sam
	$(PYTHON) -m venv $(TOOLS)/checkov
	@echo "installing aws-sam-cli $(SAM_VERSION) and checkov $(CHECKOV_VERSION) into $(TOOLS) (side by side)"
	@$(TOOLS)/sam/bin/python -m pip install $(PIP_FLAGS) 'aws-sam-cli==$(SAM_VERSION)' & sam=$$!; \
	$(TOOLS)/checkov/bin/python -m pip install $(PIP_FLAGS) 'checkov==$(CHECKOV_VERSION)'; rc=$$?; \
	wait $$sam && test $$rc -eq 0
	@touch $@

tools: $(TOOLS_STAMP)

# cfn-lint also runs in the pytest suite (tests/template). checkov only sees the parameter defaults (it drops
# resources whose condition is false there), so it also scans the concrete variants tests/template/variants.py
# renders (optional parts on: new trail, EventBridge source, Slack, stream watcher; Fn::ForEach expanded). Skips
# are justified in template.yaml. On the raw template checkov logs "Failed to create a new template with enriched
# resources": its source-line mapping does not know Fn::ForEach; the template is still scanned.
template-check: venv tools
	$(SAM_ENV) $(SAM) validate --lint $(SAM_FLAGS) --template template.yaml
	$(BIN)/cfn-lint template.yaml templates/*.yaml
	@rm -rf $(TOOLS)/checkov-input && mkdir -p $(TOOLS)/checkov-input && cp template.yaml templates/*.yaml $(TOOLS)/checkov-input/
	$(BIN)/python -m tests.template.variants $(TOOLS)/checkov-input
	BC_SKIP_MAPPING=TRUE $(CHECKOV) --quiet --compact --framework cloudformation --directory $(TOOLS)/checkov-input

# `sam build` (makefile builder, in source: no copy of .venv): runs the build-<LogicalId> targets below.
# SAM streams the build targets' standard output but shows their error output only when one fails, so the package
# build says the bytecode's absence on standard output, and the build ends with a warning line when the package has
# no bytecode of the runtime's version (see lambda-bytecode). A package built without it is built again once that
# Python is found.
build: tools
	@if [ -e $(LAMBDA_PACKAGE)/.built ] && [ -z "$$($(LAMBDA_PYC_FOUND))" ] && $(LAMBDA_PYTHON_OK); then \
		rm -f $(LAMBDA_PACKAGE)/.built; fi
	$(SAM_ENV) $(SAM) build $(SAM_FLAGS) --build-in-source --template template.yaml
	@test -n "$$($(LAMBDA_PYC_FOUND))" || echo "WARNING: the Lambda package has no bytecode: no working\
	 python$(LAMBDA_PYTHON) on PATH (or LAMBDA_PYTHON_BIN), so each cold start compiles every module it imports\
	 (about 1 s more CPU); install Python $(LAMBDA_PYTHON) and run make build again" >&2

# The functions share one layer (DependenciesLayer: every dependency from pyproject.toml, under python/) and each
# function's own artifact is only the project's code (auditor/ and handlers/, without the demo), so the dependencies
# are built, uploaded and stored once instead of once per function. SAM's makefile builder calls build-<LogicalId>
# with ARTIFACTS_DIR set. Everything is installed from Linux wheels for the template's runtime and architecture
# (python3.12, arm64), the project itself as pure Python (DDB_AUDIT_COMPILE=0: setup.py's compiler targets this
# machine, not Lambda); no tests/, events/ or dev tools ride along (the test oracle lives in tests/). The install is
# done once into $(LAMBDA_PACKAGE) (rebuilt when pyproject.toml or the code changes) and split into the two parts.
LAMBDA_FUNCTIONS := DependenciesLayer \
                    TrailIngestFunction EventsIngestFunction EvaluatorFunction NotifierFunction SecurityHubFunction \
                    StreamItemSizeFunction MetricsAuditFunction WeeklyReportFunction CaptureControllerFunction \
                    ModelReviewFunction
LAMBDA_PYTHON    ?= 3.12
LAMBDA_PLATFORM  ?= manylinux2014_aarch64
LAMBDA_PACKAGE   ?= .aws-sam/lambda-package
#: What building the wheel reads besides the packages.
LAMBDA_TREE      := pyproject.toml setup.py README.md LICENSE
LAMBDA_SOURCES   := $(LAMBDA_TREE) $(shell find auditor handlers -type f -not -path '*/__pycache__/*' -not -name '*.so')
#: The runtime's interpreter, to write the package's bytecode (see lambda-bytecode); found on PATH.
LAMBDA_PYTHON_BIN ?= $(shell command -v python$(LAMBDA_PYTHON) 2>/dev/null)
#: Succeeds when LAMBDA_PYTHON_BIN runs and is the runtime's version (a shim that cannot start that version fails).
LAMBDA_PYTHON_OK  = { [ -n "$(LAMBDA_PYTHON_BIN)" ] && "$(LAMBDA_PYTHON_BIN)" -c 'import sys; \
                    sys.exit(sys.version_info[:2] != tuple(map(int, "$(LAMBDA_PYTHON)".split("."))))' 2>/dev/null; }
#: Prints a bytecode file of the runtime's version in the built package, if there is one.
LAMBDA_PYC_FOUND  = find $(LAMBDA_PACKAGE)/handlers -name '*.cpython-$(subst .,,$(LAMBDA_PYTHON)).pyc' -print -quit 2>/dev/null
#: What a function's own artifact holds (the project and its metadata; the rest of $(LAMBDA_PACKAGE) is the layer).
LAMBDA_OWN       := auditor handlers ddb_traffic_auditor-*.dist-info

# The wheel is built from a clean copy of the sources (no stale build/ directory can leak deleted modules in). The
# copy has no git metadata, so the version setuptools-scm gives the checkout is handed over the way a git archive
# carries it (.git_archival.txt); without git it is pyproject.toml's fallback_version.
$(LAMBDA_PACKAGE)/.built: $(LAMBDA_SOURCES)
	@rm -rf $(LAMBDA_PACKAGE) && mkdir -p $(LAMBDA_PACKAGE)
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	mkdir "$$tmp/src" && cp -R $(LAMBDA_TREE) auditor handlers "$$tmp/src/"; \
	if node=$$(git rev-parse HEAD 2>/dev/null) && name=$$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then \
		printf 'node: %s\ndescribe-name: %s\n' "$$node" "$$name" >"$$tmp/src/.git_archival.txt"; fi; \
	find "$$tmp/src" -name __pycache__ -prune -exec rm -rf {} +; \
	find "$$tmp/src" -name '*.so' -delete; \
	DDB_AUDIT_COMPILE=0 $(PYTHON) -m pip wheel $(PIP_FLAGS) --no-deps --wheel-dir "$$tmp/wheels" "$$tmp/src"; \
	$(PYTHON) -m pip install $(PIP_FLAGS) --no-compile --no-warn-conflicts --only-binary=:all: \
		--platform $(LAMBDA_PLATFORM) --implementation cp --python-version $(LAMBDA_PYTHON) \
		--target $(LAMBDA_PACKAGE) "$$tmp"/wheels/*.whl
	rm -rf $(LAMBDA_PACKAGE)/bin $(LAMBDA_PACKAGE)/auditor/demo
	@$(MAKE) --no-print-directory lambda-bytecode LAMBDA_BYTECODE_DIR=$(LAMBDA_PACKAGE) 2>&1
	@touch $@

# Lambda's file system is read-only, so Python cannot cache the bytecode it compiles: without .pyc files in the
# package every cold start compiles every module it imports again (measured for the trail-ingest handler with
# Python 3.12: 1.6 s CPU from source, 0.66 s with the bytecode). The bytecode is written by the runtime's own
# Python version (it differs between versions) as unchecked-hash .pyc files, which Python uses without comparing
# timestamps (the zip upload does not keep them); the package is rebuilt whole whenever a source changes. Without
# that interpreter the package still works, and says it will compile at each cold start.
.PHONY: lambda-bytecode
lambda-bytecode:
	@if $(LAMBDA_PYTHON_OK); then \
		"$(LAMBDA_PYTHON_BIN)" -m compileall -q -j 0 --invalidation-mode unchecked-hash "$(LAMBDA_BYTECODE_DIR)" >/dev/null \
			|| echo "lambda-bytecode: some modules did not compile; they compile at each cold start" >&2; \
	else \
		echo "lambda-bytecode: no working python$(LAMBDA_PYTHON) on PATH (LAMBDA_PYTHON_BIN): the package has no bytecode, each cold start compiles it" >&2; \
	fi

.PHONY: $(addprefix build-,$(LAMBDA_FUNCTIONS))
# The layer: every installed dependency, under python/ (Lambda adds /opt/python to sys.path).
build-DependenciesLayer: $(LAMBDA_PACKAGE)/.built
	@test -n "$(ARTIFACTS_DIR)" || { echo "$@: ARTIFACTS_DIR is not set (run it through sam build)" >&2; exit 2; }
	mkdir -p "$(ARTIFACTS_DIR)/python"
	cp -a $(LAMBDA_PACKAGE)/. "$(ARTIFACTS_DIR)/python/"
	rm -rf "$(ARTIFACTS_DIR)/python/.built" $(addprefix "$(ARTIFACTS_DIR)/python/",$(LAMBDA_OWN))

# A function: the project's code only.
$(addprefix build-,$(filter-out DependenciesLayer,$(LAMBDA_FUNCTIONS))): $(LAMBDA_PACKAGE)/.built
	@test -n "$(ARTIFACTS_DIR)" || { echo "$@: ARTIFACTS_DIR is not set (run it through sam build)" >&2; exit 2; }
	mkdir -p "$(ARTIFACTS_DIR)"
	cp -a $(addprefix $(LAMBDA_PACKAGE)/,$(LAMBDA_OWN)) "$(ARTIFACTS_DIR)/"
