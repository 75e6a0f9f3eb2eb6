"""Repeated large outputs reuse the heap's pages (no allocator cliff).

An output of a few hundred KB once shrank its block when finished; freed, that block raised
glibc's mapping threshold to less than the next call's largest block, so every call mapped
fresh pages and faulted each of them in (about fifty a call for 10,000 floats).
"""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc",
    reason="the mapping threshold is glibc's",
)

# A fresh process: what the test process freed before (pytest's own large blocks) may have
# raised the threshold already.
PROGRAM = """
import random, resource, sys
from runcontext import canonical_json
keep = sys.argv[1] == "keep"
rng = random.Random(5)
value = [rng.uniform(-1e6, 1e6) for _ in range(10_000)]  # ~190 KB of output
kept = canonical_json(value)
for _ in range(5):
    kept = canonical_json(value)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    out = canonical_json(value)
    if keep:
        kept = out  # the previous output is alive while the next is written
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.parametrize("keep", [False, True])
def test_repeated_calls_do_not_fault_in_fresh_pages(keep: bool) -> None:
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM, "keep" if keep else "drop"],
        check=True,
        capture_output=True,
        text=True,
    )
    faults = int(run.stdout)
    # 40 calls: 940 faults when each took fresh pages, 0 to 50 since.
    assert faults < 200, f"{faults} page faults in 40 calls"
