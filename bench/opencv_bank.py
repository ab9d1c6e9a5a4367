#!/usr/bin/env python3
"""OpenCV's loop over a bank, the CPU baseline beside bench_bank (issue 12): cv2.matchTemplate
(TM_CCOEFF_NORMED) once per template on a noise frame, for bench_bank's cases (same frame sizes,
template sizes and counts). Each call is independent of the others, so the loop's time is that of
K templates (median of 3 timed runs of the K calls, after one warm-up call) scaled to the bank.
Usage: bench/opencv_bank.py [K] [CASE ...]   (K default 2; cases by bench_bank's numbers)"""
import statistics
import sys
import time

import cv2
import numpy as np

# bench_bank's cases, in its order: (frame width, height, templates, side).
CASES = [(1920, 1080, 16, 16), (1920, 1080, 64, 16), (1920, 1080, 256, 16), (1920, 1080, 1024, 16),
         (1920, 1080, 16, 32), (1920, 1080, 64, 32), (1920, 1080, 256, 32), (1920, 1080, 16, 64),
         (1920, 1080, 64, 64), (3840, 2160, 64, 32), (3840, 2160, 16, 64)]


def main(argv):
    try:
        k = int(argv[1]) if len(argv) > 1 else 2
        chosen = [int(a) for a in argv[2:]] or list(range(len(CASES)))
    except ValueError:
        sys.exit(__doc__)
    if k < 1 or any(not 0 <= c < len(CASES) for c in chosen):
        sys.exit(__doc__)
    rng = np.random.default_rng(2026)
    print(f"OpenCV {cv2.__version__}, {cv2.getNumThreads()} threads, TM_CCOEFF_NORMED, "
          f"the loop's time scaled from {k} templates")
    print("| frame | bank | OpenCV loop (ms) | one template (ms) |")
    print("|---|---|---|---|")
    for case in chosen:
        w, h, count, side = CASES[case]
        frame = rng.integers(0, 256, size=(h, w), dtype=np.uint8)
        templates = [rng.integers(0, 256, size=(side, side), dtype=np.uint8) for _ in range(min(k, count))]
        cv2.matchTemplate(frame, templates[0], cv2.TM_CCOEFF_NORMED)  # warm-up
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            for t in templates:
                cv2.matchTemplate(frame, t, cv2.TM_CCOEFF_NORMED)
            runs.append((time.perf_counter() - start) * 1000.0 / len(templates))
        one = statistics.median(runs)
        print(f"| {w}x{h} | {count} x {side}x{side} | {one * count:.1f} | {one:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv)
