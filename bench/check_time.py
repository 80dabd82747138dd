#!/usr/bin/env python3
"""Where make check's time goes: reads the TAP log of one or more
'make check' runs (tests/check.py prints each case's seconds and a
'# time:' breakdown) and prints the parts side by side, with ratios
against the first log.  Figures, not verdicts.

  make check > cold.log 2>&1; make check > warm.log 2>&1
  bench/check_time.py cold.log warm.log
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Sequence

PART = re.compile(r"^# time: (.+): (\d+) s")


def parts(log: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2))
            for m in map(PART.match, log.splitlines()) if m}


def main(argv: Sequence[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    runs = [parts(Path(a).read_text(errors="replace")) for a in argv]
    names = list(dict.fromkeys(n for r in runs for n in r))
    print(f"{'part':32}" + "".join(f"{Path(a).name:>16}" for a in argv))
    for n in names:
        row = f"{n:32}"
        for r in runs:
            v = r.get(n)
            ratio = (f" ({v / runs[0][n]:.2f}x)"
                     if v is not None and runs[0].get(n) and r is not runs[0]
                     else "")
            row += f"{(str(v) + ' s' + ratio) if v is not None else '-':>16}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
