#!/usr/bin/env python3
"""Issue 13's measure over several bench_track runs: reads their `issue-13:` lines and prints the
medians of the pinned-frame call, the device-frame call and detect on those frames, the ratio of
the medians, the median of the runs' own ratios and how many runs reach 1/10 (each ratio from the
microseconds, not the rounded 1/x the line prints).
Usage: bench/track_ratio.py FILE   (FILE: the issue-13 lines, one a run)"""
import re
import statistics
import sys

LINE = re.compile(r"pinned \(gathered\) ([\d.]+) us = 1/[\d.]+ of detect pinned ([\d.]+) us; "
                  r"device frame ([\d.]+) us = 1/[\d.]+ of detect device ([\d.]+) us")


def summary(what, calls, detects):
    ratios = [d / c for c, d in zip(calls, detects)]
    call, detect = statistics.median(calls), statistics.median(detects)
    reached = sum(1 for r in ratios if r >= 10.0)
    return (f"{what}: call median {call:.1f} us ({min(calls):.1f}-{max(calls):.1f}), detect median {detect:.1f} us: "
            f"1/{detect / call:.2f} of the medians; per run 1/{min(ratios):.2f}-1/{max(ratios):.2f}, "
            f"median 1/{statistics.median(ratios):.2f}, 1/10 or better in {reached} of {len(ratios)}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    runs = [tuple(map(float, m.groups())) for m in map(LINE.search, open(sys.argv[1])) if m]
    if not runs:
        sys.exit(f"{sys.argv[1]}: no issue-13 line")
    print(f"issue-13 over {len(runs)} runs")
    print(summary("pinned frame", [r[0] for r in runs], [r[1] for r in runs]))
    print(summary("device frame", [r[2] for r in runs], [r[3] for r in runs]))


if __name__ == "__main__":
    main()
