# The README's commands call these targets. `install`, `test` and `lint` work on a machine with
# only the Rust toolchain, Python 3.11 and pip (`install-test` installs what the tests need);
# `vectors` also needs Node, and `fuzz` needs `cargo install cargo-fuzz`. `test` also runs
# `test-js`, which needs the wasm32-unknown-unknown target, Node 20, npm, Chromium and tsc
# (.ci/run installs what is missing).
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: help install install-test test test-rust test-python test-js js tools lint bench bench-check fuzz vectors packaging clean
FUZZ_SECONDS ?= 60

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

install:  ## build and install the package (release build of the Rust extension)
	$(PIP) install .

# `install-test` builds the extension only when it has to: when runcontext already imports from
# this tree (an editable install, as the README's `pip install -e .` makes) and no build input is
# newer than the extension that install wrote into python/runcontext/, it installs the extras'
# requirements (read from pyproject.toml, `runcontext[...]` expanded) and nothing else.
EXTRAS := test,lint,integrations,postgres
BUILD_INPUTS := pyproject.toml Cargo.toml Cargo.lock rust
EXTENSION = python/runcontext/_core$(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
FROM_THIS_TREE := import pathlib, runcontext; raise SystemExit(pathlib.Path(runcontext.__file__).parent != pathlib.Path("python/runcontext").resolve())
REQUIREMENTS := import tomllib; extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]; expand = lambda names: [x for n in names for r in extras[n] for x in (expand(r[len("runcontext["):-1].split(",")) if r.startswith("runcontext[") else [r])]; print("\n".join(dict.fromkeys(expand("$(EXTRAS)".split(",")))))

install-test:  ## install the package in editable mode with the test, lint, integration and PostgreSQL dependencies (no rebuild when it is up to date)
	@if [ -f $(EXTENSION) ] && [ -z "$$(find $(BUILD_INPUTS) -newer $(EXTENSION) -type f)" ] \
		&& $(PYTHON) -c '$(FROM_THIS_TREE)' 2>/dev/null; then \
		echo "runcontext is installed from this tree and its extension is up to date: installing the test requirements only"; \
		$(PYTHON) -c '$(REQUIREMENTS)' | $(PIP) install -r /dev/stdin; \
	else \
		echo "building and installing runcontext (editable) with the test requirements"; \
		$(PIP) install -e '.[$(EXTRAS)]'; \
	fi

# The Python sdist carries no js/ (nor rust/wasm): there `make test` is the Rust and Python tests.
TEST_JS := $(if $(wildcard js/package.json),test-js)

test: install-test tools test-rust test-python $(TEST_JS)  ## install everything the tests need, then run every test

test-rust:  ## the core's unit tests and the shared vectors (no Python needed)
	cargo test --workspace

test-python:  ## pytest: binding, reference agreement, adapters, providers, sessions, CLI
	$(PYTHON) -m pytest -p no:cacheprovider --ignore-glob='tests/test_js_*.py'

# The JavaScript package (js/): the core compiled to WebAssembly through rust/wasm, copied into
# js/ with the licences; `npm pack` in js/ then packs it. Needs `rustup target add
# wasm32-unknown-unknown`; the tests need Node 20, npm, Chromium and tsc (Debian's
# node-typescript). tests/test_js_*.py (the differential, concurrent writers) run here, not in
# test-python.
WASM := target/wasm32-unknown-unknown/wasm/runcontext_wasm.wasm

tools:  ## what the tests run besides Python: the wasm32 target (rustup), Debian's chromium and node-typescript (apt-get, as root)
	rustup target add wasm32-unknown-unknown
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v tsc >/dev/null || missing="$$missing node-typescript"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" -ne 0 ]; then \
			echo "make tools: the tests need Debian's$$missing (sudo apt-get install$$missing)" >&2; \
			exit 1; \
		fi; \
		echo "make tools: installing Debian's$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

js:  ## build the JavaScript package's .wasm (rust/wasm) into js/
	cargo build -p runcontext-wasm --target wasm32-unknown-unknown --profile wasm
	cp $(WASM) js/runcontext.wasm
	cp LICENSE-MIT LICENSE-APACHE js/

test-js: tools js  ## the JavaScript package: node --test (vectors, values, sessions, npm pack, headless Chromium), tsc on the declarations, the differential against Python, Node and Python writers on one file
	cd js && node --test test/*.test.js
	tsc -p js/test/tsconfig.json
	$(PYTHON) -m pytest -p no:cacheprovider tests/test_js_*.py

lint:  ## formatting, clippy, ruff, mypy --strict and stubtest
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests benches
	$(PYTHON) -m ruff format --check python tests benches
	$(PYTHON) -m mypy --strict python/runcontext
	$(PYTHON) -m mypy.stubtest runcontext._core --allowlist stubtest-allowlist.txt

bench:  ## benchmarks against the anchors (by hand; prints medians and ratios)
	$(PIP) install -e '.[bench]'
	cd benches && for b in bench_*.py; do echo "== $$b"; $(PYTHON) $$b || exit 1; done

bench-check:  ## every benchmark body once, untimed and small (CI: the suite cannot rot; no time gate)
	$(PIP) install -e '.[bench]'
	$(PYTHON) -m pytest -p no:cacheprovider benches --benchmark-disable -q

fuzz:  ## run each cargo-fuzz target for FUZZ_SECONDS (needs `cargo install cargo-fuzz`)
	cd fuzz && for t in canonicalize_text runcontext transcript_line; do \
		RUSTC_BOOTSTRAP=1 cargo fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS) || exit 1; done

vectors:  ## regenerate the conformance vectors (needs node for the numbers; a build ships them)
	node docs/vectors/gen_es_numbers.js
	$(PYTHON) tests/gen_runcontext_vectors.py
	$(PYTHON) tests/gen_transcript_vectors.py
	$(PYTHON) tests/gen_keyed_vectors.py
	$(PYTHON) tests/gen_adapter_vectors.py

packaging:  ## build the sdist, and from it a wheel per CPython 3.11+ found; install and check each (.ci/packaging.sh)
	PYTHON=$(PYTHON) .ci/packaging.sh

clean:
	cargo clean
	rm -f python/runcontext/_core*.so
