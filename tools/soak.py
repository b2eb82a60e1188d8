"""Run the test suite N times in a row while CPU-heavy processes run beside it (issue 12: no flaky plans under load).

    python tools/soak.py [--runs 20] [--burners 2] [-- PYTEST ARGS]

Each burner is a separate process spinning on arithmetic for the whole soak, so the suite shares the cores the way
it does on a busy CI machine. Prints one line per run (exit code, passed/failed counts, seconds) and a summary;
exits non-zero if any run failed.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _burn(stop: mp.Event) -> None:
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x = (x * 31 + i) % 1_000_003


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--burners", type=int, default=2, help="CPU-heavy processes running beside the suite")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    a = ap.parse_args()
    stop = mp.Event()
    burners = [mp.Process(target=_burn, args=(stop,), daemon=True) for _ in range(a.burners)]
    for b in burners:
        b.start()
    failed = 0
    try:
        for run in range(1, a.runs + 1):
            t0 = time.monotonic()
            res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *a.pytest_args],
                                 cwd=ROOT, capture_output=True, text=True)
            tail = next((ln for ln in reversed(res.stdout.splitlines()) if " passed" in ln or " failed" in ln), "")
            counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped)", tail))
            failed += res.returncode != 0
            print(f"run {run:2d}/{a.runs}: exit {res.returncode}, {counts.get('passed', 0)} passed, "
                  f"{counts.get('failed', 0)} failed, {time.monotonic() - t0:.0f} s", flush=True)
            if res.returncode != 0:
                print("\n".join(res.stdout.splitlines()[-30:]), flush=True)
    finally:
        stop.set()
        for b in burners:
            b.join(timeout=5)
    print(f"{a.runs - failed} of {a.runs} runs green with {a.burners} CPU burners beside the suite")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
