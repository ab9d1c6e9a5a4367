#!/usr/bin/env python3
"""OpenCV's cv2.matchTemplate (TM_CCOEFF_NORMED) on this host's CPUs: the CPU baseline beside
bench_ncc, same frame and template sizes. Median of repeated runs after one warm-up."""
import statistics
import time

import cv2
import numpy as np

rng = np.random.default_rng(12345)
print(f"OpenCV {cv2.__version__}, {cv2.getNumThreads()} threads")
print("| frame | template | OpenCV matchTemplate (ms) |")
print("|---|---|---|")
for w, h in ((1920, 1080), (3840, 2160)):
    frame = rng.integers(0, 256, size=(h, w), dtype=np.uint8)
    for side in (8, 16, 32, 64, 128, 256):
        tpl = frame[h // 2:h // 2 + side, w // 3:w // 3 + side].copy()
        cv2.matchTemplate(frame, tpl, cv2.TM_CCOEFF_NORMED)
        times = []
        start = time.perf_counter()
        while len(times) < 3 or (len(times) < 15 and time.perf_counter() - start < 1.0):
            a = time.perf_counter()
            cv2.matchTemplate(frame, tpl, cv2.TM_CCOEFF_NORMED)
            times.append((time.perf_counter() - a) * 1000.0)
        print(f"| {w}x{h} | {side} | {statistics.median(times):.1f} |", flush=True)
