# SPDX-License-Identifier: GPL-2.0
"""The samples of make bench, for the tables of selftests/bench.sh and
selftests/pair-bench.sh: a file of "VARIANT<TAB>ROW<TAB>ROUND<TAB>VALUE"
lines, one per measurement, summed up as each row's median and spread."""

import statistics


def load(path):
    """{variant: {row: [values]}} of a samples file"""
    data = {}
    with open(path) as f:
        for line in f:
            v, row, _, val = line.rstrip("\n").split("\t")
            data.setdefault(v, {}).setdefault(row, []).append(float(val))
    return data


def med(data, v, row):
    """the median of a variant's row, None without samples"""
    s = data.get(v, {}).get(row)
    return statistics.median(s) if s else None


def spread(data, v, row):
    """(max - min) / median of a variant's row, None without samples"""
    s = data.get(v, {}).get(row)
    m = med(data, v, row)
    return (max(s) - min(s)) / m if s and m else None


def num(x):
    """a figure for the table: whole above 100, two decimals below"""
    return "-" if x is None else ("%.0f" % x if abs(x) >= 100 else "%.2f" % x)


def ratio(a, b):
    """a / b, None when either is missing (or b is 0)"""
    return a / b if a is not None and b else None
