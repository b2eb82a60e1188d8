"""Conformance: for every (op, type) micronn registers, is it tested against the TFLM wheel, and passing?

    python benchmarks/conformance.py [--json] [--markdown] [--tests tests/kernels tests/test_models.py ...]

Counts TFLM's ops only (micronn's own TinySeg ops, which the wheel does not have, are left out). Runs the test suite
with a recorder (tests/conftest.py): a test that passes after running both the TFLM
wheel and micronn marks every (op, type) micronn executed in it as verified. An (op, type) a kernel declares
but no passing wheel comparison executed is listed as untested. ``--markdown`` prints the README's table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from micronn.kernels import REGISTRY
from micronn.tflite import schema

ROOT = Path(__file__).resolve().parents[1]


def verified_pairs(tests: list[str]) -> tuple[set[tuple[str, str]], int]:
    """(op, type) pairs verified against the wheel by passing tests, and pytest's exit code."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "verified.json"
        env = dict(os.environ, MICRONN_CONFORMANCE=str(out))
        # in this process (-n 0): the recording hooks of tests/conftest.py collect what one process saw
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *tests],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL).returncode
        return {tuple(p) for p in json.loads(out.read_text())} if out.exists() else set(), rc


def table(verified: set[tuple[str, str]]) -> list[dict]:
    """One row per declared (op, type); kernels that declare no types (control flow) list the types seen."""
    rows = []
    for op in sorted(o for o in REGISTRY if REGISTRY[o].in_tflm):  # micronn's own ops (TinySeg) are not TFLM's
        declared = sorted(REGISTRY[op].dtypes) or sorted(t for o, t in verified if o == op) or ["-"]
        for dtype in declared:
            rows.append({"op": op, "type": dtype, "verified": (op, dtype) in verified})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", nargs="*", default=["tests/kernels", "tests/test_models.py",
                                                   "tests/test_extra_models.py", "tests/simulate",
                                                   "tests/tflite/test_compression.py", "tests/compress"])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="the supported-op table for the README")
    a = ap.parse_args()
    verified, rc = verified_pairs(a.tests)
    rows = table(verified)
    ok = sum(r["verified"] for r in rows)
    if a.json:
        print(json.dumps({"pytest_exit_code": rc, "verified": ok, "registered": len(rows), "rows": rows}, indent=1))
        return
    if a.markdown:
        by_op: dict[str, list[str]] = {}
        for r in rows:
            by_op.setdefault(r["op"], []).append(r["type"] + ("" if r["verified"] else " (untested)"))
        print("| op | types verified byte for byte against the TFLM wheel |\n|---|---|")
        for op, types in by_op.items():
            print(f"| {op} | {', '.join(types)} |")
        builtin = sum(1 for op in by_op if op in schema.BUILTIN_CODES)
        print(f"\n{ok} of {len(rows)} registered (op, type) pairs verified; {len(by_op)} ops of TFLM's: {builtin} "
              f"builtin, {len(by_op) - builtin} custom (signal library, detection post-processing, DECODE).")
        return
    width = max(len(r["op"]) for r in rows)
    for r in rows:
        print(f"{r['op']:<{width}}  {r['type']:<8}  {'verified' if r['verified'] else 'UNTESTED'}")
    print(f"\n{ok} of {len(rows)} registered (op, type) pairs verified against the TFLM wheel "
          f"(pytest exit code {rc})")


if __name__ == "__main__":
    main()
