# SPDX-License-Identifier: MIT
"""What the bench's reports (report.sh, cores.sh) share: numbers from the
.tsv rows and how they are printed. Imported from the reports' embedded
Python, which put bench/ on sys.path (BENCH_DIR)."""

import statistics


def read(path):
    """A .tsv file's rows as dicts keyed by its header; [] when it is
    missing or empty."""
    try:
        lines = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    except OSError:
        return []
    return [dict(zip(lines[0], f)) for f in lines[1:]] if lines else []


def med(vals):
    """The median of the values measured (None left out); None if none."""
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def num(v):
    """A .tsv cell as a number; None for NA, an empty cell or anything else."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(v, f="%.2f"):
    return "–" if v is None else f % v


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def times(r):
    return "–" if r is None else "%.2fx" % r
