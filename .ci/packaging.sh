#!/usr/bin/env bash
# Packaging check, run by .ci/run after `make test` (and by hand: `make packaging`):
#   1. build the sdist, and check it holds what building and testing it needs;
#   2. from the unpacked sdist alone: `cargo test --workspace` and a wheel for every CPython
#      found (below); check each wheel's contents and its manylinux tag (maturin's own check);
#   3. install each wheel in a fresh venv of its Python, with no index and no dependencies, import
#      it and run `runcontext verify-vectors` (every vectors file the wheel was built with).
# The Pythons: /usr/bin/python3.N and pyenv's /root/.pyenv/versions/3.N.*, for 3.11 and later
# (requires-python), or the space-separated list in PACKAGING_PYTHONS. Bounded: each step has a
# timeout, and the whole script takes about 4 minutes on 2 cores with three Pythons.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/runcontext-packaging.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { printf '\n== packaging: %s\n' "$*"; }
fail() { printf 'packaging: FAILED: %s\n' "$*" >&2; exit 1; }

python=${PYTHON:-python}
"$python" -m pip install --quiet 'maturin>=1.12,<2'

if [[ -n "${PACKAGING_PYTHONS:-}" ]]; then
    read -r -a pythons <<<"$PACKAGING_PYTHONS"
else
    pythons=()
    seen=" "
    for candidate in /usr/bin/python3.1[1-9] /root/.pyenv/versions/3.1[1-9].*/bin/python3; do
        [[ -x "$candidate" ]] || continue
        version=$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || continue
        [[ "$seen" == *" $version "* ]] && continue  # one interpreter per minor version
        seen+="$version "
        pythons+=("$candidate")
    done
fi
[[ ${#pythons[@]} -gt 0 ]] || fail "no CPython 3.11 or later found"
step "Pythons: ${pythons[*]}"

step "sdist"
timeout 120 "$python" -m maturin sdist --out "$work/sdist" >/dev/null
sdist=$(ls "$work"/sdist/runcontext-*.tar.gz)
listing=$(tar -tzf "$sdist")
for needed in docs/vectors/jcs.json docs/vectors/transcript-v2.json docs/vectors/es-numbers.txt \
    tests/conftest.py tests/reference LICENSE-MIT LICENSE-APACHE Cargo.lock rust/core/tests \
    rust/python/build.rs; do
    grep -q "^runcontext-[^/]*/$needed" <<<"$listing" || fail "the sdist lacks $needed"
done
# The vectors are stored once, in docs/vectors; a build copies them into the package.
if grep -q "^runcontext-[^/]*/python/runcontext/vectors/" <<<"$listing"; then
    fail "the sdist holds a second copy of the vectors (python/runcontext/vectors/)"
fi
mkdir "$work/src"
tar -xzf "$sdist" -C "$work/src" --strip-components=1
echo "$(basename "$sdist"): $(wc -l <<<"$listing") files"

step "cargo test --workspace, in the unpacked sdist"
(cd "$work/src" && CARGO_TARGET_DIR="$work/target" timeout 600 cargo test --workspace --quiet)

step "wheels from the unpacked sdist"
interpreters=()
for p in "${pythons[@]}"; do interpreters+=(--interpreter "$p"); done
# The release profile (fat LTO), as `pip install` builds it; one target directory for all.
(cd "$work/src" && CARGO_TARGET_DIR="$work/target" timeout 900 \
    "$python" -m maturin build --release --out "$work/wheels" "${interpreters[@]}")

for wheel in "$work"/wheels/*.whl; do
    name=$(basename "$wheel")
    # maturin's auditwheel check chose the tag: the oldest manylinux whose symbol versions the
    # extension stays within (see the README, "Wheels").
    [[ "$name" == *-manylinux_* ]] || fail "$name: not a manylinux wheel"
    contents=$("$python" -m zipfile -l "$wheel")
    for needed in runcontext/_core runcontext/py.typed runcontext/vectors/jcs.json \
        runcontext/vectors/es-numbers.txt runcontext/cli/page.js runcontext/cli/page.css licenses/LICENSE-MIT licenses/LICENSE-APACHE; do
        grep -q "$needed" <<<"$contents" || fail "$name lacks $needed"
    done
    if grep -qE '^ *(docs|tests)/' <<<"$contents"; then fail "$name ships docs/ or tests/"; fi
    # Every vectors file of docs/vectors, once, in runcontext/vectors/ (rust/python/build.rs).
    shipped=$(grep -oE 'runcontext/vectors/[^ ]+' <<<"$contents" | sed 's|.*/||' | sort)
    expected=$(cd "$work/src/docs/vectors" && ls -1 -- *.json *.txt | sort)
    [[ "$shipped" == "$expected" ]] || fail "$name: runcontext/vectors/ holds [$shipped], not [$expected]"
    echo "$name: $(du -k "$wheel" | cut -f1) KiB"
done

step "install and check each wheel"
for p in "${pythons[@]}"; do
    version=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    venv="$work/venv-$version"
    "$p" -m venv "$venv"
    timeout 120 "$venv/bin/python" -m pip install --quiet --no-index --no-deps \
        --find-links "$work/wheels" runcontext \
        || fail "no wheel installs on Python $version"
    # Outside the source tree, so the installed package is the one imported.
    (cd "$work" && timeout 120 "$venv/bin/python" -c '
import sys, runcontext
from runcontext.conformance import bundled_vectors
assert runcontext.__file__.startswith(sys.prefix), runcontext.__file__
ctx = runcontext.RunContext(facts=[("date", "2026-12-01")])
print(f"Python {sys.version.split()[0]}: runcontext {runcontext.__version__}, "
      f"{len(bundled_vectors())} vectors files, {ctx.digest[:15]}…")
' && timeout 300 "$venv/bin/runcontext" verify-vectors) || fail "the wheel on Python $version"
done
step "ok"
