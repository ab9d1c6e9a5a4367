#!/usr/bin/env python3
"""Plots (PNG, matplotlib) from the benchmarks' own output; nothing is typed in by hand.

Inputs are the markdown tables the benchmarks print (and bench_live's CSV). Each input is a file,
or FILE#HEADING to read only the part of FILE under the first markdown heading containing HEADING
(up to the next heading of the same or a higher level), e.g. a section of bench/RESULTS.md.

  --ncc       bench_ncc's table (| frame | template | auto (pick) | ... | NPP ... |), or any table
              with frame, template, a nccmatch column ("auto (pick)", "after auto (pick)"), optionally
              a frame-on-device column ("auto-dev", "frame on device"), an NPP column and an OpenCV
              column ("OpenCV ..."; values in ms or with an "ms" suffix)  -> ncc_vs_npp_opencv.png
  --opencv    bench/opencv_matchtemplate.py's table (| frame | template | OpenCV matchTemplate (ms) |),
              when the --ncc table has no OpenCV column
  --stream    bench_stream's table (| frame | bank | match | ... | 2 in flight | ...)  -> bank_time.png
  --banks     bench_bank's table (| frame | bank | fused loop | ... | GEMM, sparse | ... | NPP loop ...),
              with --opencv-banks bench/opencv_bank.py's (| frame | bank | OpenCV loop (ms) | ...):
              each bank's time by kind against its size, one panel a frame size -> bank_baselines.png
  --producers bench/producers.sh's table (| producer | alone | 1x64² | ...)           -> producers.png
  --live      bench_live --csv output (row,frame,meta_us,message_us)                  -> live_latency.png
  --logs DIR  a gpu-test.sh log folder: takes bench_ncc.log, opencv_matchtemplate.log, bench_stream.log,
              bench_bank.log, opencv_bank.log, producers.log and bench_live.csv from it where present
  --out DIR   where the PNGs go (default: this script's folder)

bench/plots/make-plots.sh installs matplotlib (scripts/deps.sh) and runs this script.
"""
import argparse
import csv
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_input(spec):
    """The text of FILE, or of its section under the first heading containing HEADING (FILE#HEADING)."""
    path, _, heading = spec.partition("#")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not heading:
        return lines
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s", line)
        if m and heading in line:
            level = len(m.group(1))
            out = []
            for rest in lines[i + 1:]:
                n = re.match(r"^(#+)\s", rest)
                if n and len(n.group(1)) <= level:
                    break
                out.append(rest)
            return out
    sys.exit(f"{path}: no heading containing {heading!r}")


def tables(lines):
    """Every markdown table in the lines: (header cells, rows of cells)."""
    found, header, rows = [], None, []
    for line in lines + [""]:
        line = line.strip()
        if line.startswith("|") and line.endswith("|"):
            cells = [c.strip() for c in line[1:-1].split("|")]
            if header is None:
                header = cells
            elif all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                continue
            else:
                rows.append(cells + [""] * (len(header) - len(cells)))
            continue
        if header is not None and rows:
            found.append((header, rows))
        header, rows = None, []
    return found


def column(header, *patterns):
    """Index of the first header cell matching one of the regular expressions, or None."""
    for pattern in patterns:
        for i, h in enumerate(header):
            if re.fullmatch(pattern, h.replace("*", "").strip(), flags=re.IGNORECASE):
                return i
    return None


def micros(cell, default_ms=False):
    """A time cell as microseconds: '92.2 (spatial)', '17.3 ms', '**181.6**', '-' -> None."""
    m = re.match(r"^\**\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|µs|us)?", cell.strip())
    if not m:
        return None
    value = float(m.group(1))
    unit = m.group(2) or ("ms" if default_ms else "us")
    return value * 1000.0 if unit == "ms" else value


def find_table(lines, needed, what):
    for header, rows in tables(lines):
        idx = {name: column(header, *patterns) for name, patterns in needed.items()}
        if all(v is not None for k, v in idx.items() if not k.endswith("?")):
            return header, rows, idx
    sys.exit(f"no {what} table found (columns {', '.join(needed)})")


def log_axes(ax, xlabel, ylabel, title, x_base=10):
    """Both axes logarithmic, labels, title, grid and legend: the panels' common finish."""
    ax.set_xscale("log", base=x_base)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def save(fig, out, name):
    fig.tight_layout()
    path = os.path.join(out, name)
    fig.savefig(path, dpi=110)
    return path


def plot_ncc(ncc_lines, opencv_lines, out):
    header, rows, idx = find_table(ncc_lines, {
        "frame": [r"frame"], "template": [r"template"],
        "ncc": [r"auto \(pick\)", r"after auto \(pick\)"],
        "dev?": [r"auto-dev", r"after auto-dev", r"frame on device"],
        "npp?": [r"NPP(?! /).*"], "opencv?": [r"OpenCV.*"]}, "bench_ncc")
    opencv_ms = "(ms)" in (header[idx["opencv?"]] if idx["opencv?"] is not None else "")
    series = {}  # frame -> name -> [(side, us)]

    def add(frame, name, side, us):
        if us is not None:
            series.setdefault(frame, {}).setdefault(name, []).append((side, us))

    for r in rows:
        side = re.match(r"^(\d+)", r[idx["template"]])
        if not side or not re.fullmatch(r"\d+x\d+", r[idx["frame"]]):
            continue  # bank rows and the like
        side, frame = int(side.group(1)), r[idx["frame"]]
        add(frame, "nccmatch (host frame, upload included)", side, micros(r[idx["ncc"]]))
        if idx["dev?"] is not None:
            add(frame, "nccmatch (frame on the GPU)", side, micros(r[idx["dev?"]]))
        if idx["npp?"] is not None:
            add(frame, "NPP CrossCorrValid_NormLevel", side, micros(r[idx["npp?"]]))
        if idx["opencv?"] is not None:
            add(frame, "OpenCV matchTemplate (CPU)", side, micros(r[idx["opencv?"]], opencv_ms))
    if opencv_lines is not None:
        _, orows, oidx = find_table(opencv_lines, {"frame": [r"frame"], "template": [r"template"],
                                                   "ms": [r"OpenCV.*\(ms\)"]}, "OpenCV")
        for r in orows:
            add(r[oidx["frame"]], "OpenCV matchTemplate (CPU)", int(r[oidx["template"]]), micros(r[oidx["ms"]], True))
    frames = sorted(series, key=lambda f: [int(v) for v in f.split("x")])
    fig, axes = plt.subplots(1, len(frames), figsize=(6 * len(frames), 4.5), squeeze=False)
    for ax, frame in zip(axes[0], frames):
        for name, points in series[frame].items():
            points.sort()
            ax.plot([p[0] for p in points], [p[1] / 1000.0 for p in points], marker="o", label=name)
        log_axes(ax, "template side (pixels, square)", "time per frame (ms, log)",
                 f"{frame}, ccoeff-normed, one template", x_base=2)
    return save(fig, out, "ncc_vs_npp_opencv.png")


def plot_bank(lines, out):
    _, rows, idx = find_table(lines, {"frame": [r"frame"], "bank": [r"bank"], "match": [r"match"],
                                      "streamed?": [r"2 in flight"]}, "bench_stream")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    by_frame = {}
    for r in rows:
        bank = bank_cell(r[idx["bank"]])
        if bank is None:
            continue
        count, w, h = bank
        for name in ("match", "streamed?"):
            if idx[name] is None:
                continue
            us = micros(r[idx[name]])
            if us is not None:
                label = f"{r[idx['frame']]}, {'match()' if name == 'match' else '2 frames in flight'}"
                by_frame.setdefault(label, []).append((count * w * h, us, f"{count}×{w}²" if w == h else f"{count}×{w}x{h}"))
    if not by_frame:
        sys.exit("bench_stream table: no row with a bank like '16 x 32x32' or '16 x 32²' and a time")
    for label, points in by_frame.items():
        # Points, not lines: banks of equal size (16 x 32² and 1 x 128²) differ in kind.
        ax.plot([p[0] for p in points], [p[1] for p in points], ls="", marker="o" if "match" in label else "s",
                label=label)
        for x, y, text in points:
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    log_axes(ax, "bank size: templates × template pixels (log)", "µs per frame (log)", "time against bank size")
    return save(fig, out, "bank_time.png")


def bank_cell(cell):
    """(templates, width, height) from a bank cell: '16 x 32x32', '16 x 32²' -> None otherwise."""
    cell = cell.replace("×", "x")
    m = re.match(r"^(\d+)\s*x\s*(\d+)\s*x\s*(\d+)", cell)
    if m:
        return tuple(int(g) for g in m.groups())
    m = re.match(r"^(\d+)\s*x\s*(\d+)²", cell)
    return (int(m.group(1)), int(m.group(2)), int(m.group(2))) if m else None


def plot_bank_baselines(bank_lines, opencv_lines, out):
    """bench_bank's GEMM and loops beside NPP's and OpenCV's loops, by bank size, a panel a frame."""
    _, rows, idx = find_table(bank_lines, {"frame": [r"frame"], "bank": [r"bank"], "gemm": [r"GEMM, sparse"],
                                           "loop?": [r"fused loop"], "npp?": [r"NPP loop.*"]}, "bench_bank")
    series = {}  # frame -> kind -> [(size, us, label)]

    def add(frame, kind, bank, us):
        if bank is not None and us is not None:
            count, w, h = bank
            series.setdefault(frame, {}).setdefault(kind, []).append((count * w * h, us, f"{count}×{w}²" if w == h else f"{count}×{w}x{h}"))

    for r in rows:
        bank, frame = bank_cell(r[idx["bank"]]), r[idx["frame"]]
        add(frame, "nccmatch GEMM bank (sparse)", bank, micros(r[idx["gemm"]]))
        if idx["loop?"] is not None:
            add(frame, "nccmatch fused loop", bank, micros(r[idx["loop?"]]))
        if idx["npp?"] is not None:
            add(frame, "NPP loop (CrossCorrValid_NormLevel)", bank, micros(r[idx["npp?"]]))
    if opencv_lines is not None:
        _, orows, oidx = find_table(opencv_lines, {"frame": [r"frame"], "bank": [r"bank"],
                                                   "ms": [r"OpenCV loop \(ms\)"]}, "OpenCV bank")
        for r in orows:
            add(r[oidx["frame"]], "OpenCV loop (CPU)", bank_cell(r[oidx["bank"]]), micros(r[oidx["ms"]], True))
    if not series:
        sys.exit("bench_bank table: no row with a bank like '16 x 32x32' and a time")
    frames = sorted(series, key=lambda f: [int(v) for v in f.split("x")])
    fig, axes = plt.subplots(1, len(frames), figsize=(6.5 * len(frames), 4.8), squeeze=False)
    for ax, frame in zip(axes[0], frames):
        for kind, points in series[frame].items():
            points.sort()
            ax.plot([p[0] for p in points], [p[1] / 1000.0 for p in points], marker="o", ls="", label=kind)
            if kind.startswith("nccmatch GEMM"):
                for x, y, text in points:
                    ax.annotate(text, (x, y / 1000.0), textcoords="offset points", xytext=(4, -10), fontsize=7)
        log_axes(ax, "bank size: templates × template pixels (log)", "ms per frame (log)",
                 f"{frame}, ccoeff-normed, banks of one size")
    return save(fig, out, "bank_baselines.png")


def plot_producers(lines, out):
    header, rows, idx = find_table(lines, {"producer": [r"producer"], "alone": [r"alone"]}, "producers")
    variants = [i for i in range(len(header)) if i != idx["producer"]]
    names, values = [], []
    for r in rows:
        fps = [micros(r[i]) for i in variants]  # plain numbers: frames/s
        if all(v is None for v in fps):
            continue  # a producer missing on that host
        names.append(r[idx["producer"]])
        values.append(fps)
    # Left: frames/s on a log axis (decoders at 60 and sources at 5000 frames/s on one plot); right:
    # each cell's share of its producer alone, against issue 14's 90% line.
    fig, (ax, share_ax) = plt.subplots(1, 2, sharey=True, figsize=(12, 0.55 * len(names) * len(variants) / 3 + 2))
    height = 0.8 / len(variants)
    for k, i in enumerate(variants):
        ys = [n + k * height for n in range(len(names))]
        ax.barh(ys, [v[k] or 0 for v in values], height=height, label=header[i])
        if k > 0:
            shares = [100.0 * v[k] / v[0] if v[k] and v[0] else 0 for v in values]
            share_ax.barh(ys, shares, height=height, color=f"C{k}")
    ax.set_yticks([n + 0.4 - height / 2 for n in range(len(names))])
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("frames/s (steady state, log scale)")
    ax.set_title("producers alone and with nccmatch after them")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    share_ax.axvline(90, color="black", linestyle="--", linewidth=1)
    share_ax.set_xlabel("share of the producer alone (%); dashed: 90%")
    share_ax.set_title("with nccmatch / alone")
    share_ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out, "producers.png")
    fig.savefig(path, dpi=110)
    return path


def plot_live(path_csv, fps, out):
    rows = {}
    with open(path_csv, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["row"], []).append((int(r["frame"]), float(r["meta_us"]), float(r["message_us"])))
    if not rows:
        sys.exit(f"{path_csv}: no rows")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, points in rows.items():
        points = [p for p in points if p[1] >= 0]
        ax.plot([p[0] for p in points], [p[1] / 1000.0 for p in points], lw=0.8, label=f"{label}: ROI meta out")
    target = 1000.0 / fps + 1.0
    ax.axhline(target, color="red", ls="--", lw=1, label=f"target: one frame + 1 ms = {target:.1f} ms")
    ax.set_yscale("log")
    ax.set_xlabel("frame")
    ax.set_ylabel("latency, push to ROI meta at the sink (ms, log)")
    ax.set_title(f"live appsrc at {fps} frames/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out, "live_latency.png")
    fig.savefig(path, dpi=110)
    return path


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("ncc", "opencv", "stream", "banks", "opencv-banks", "producers", "live", "logs"):
        p.add_argument("--" + name)
    p.add_argument("--fps", type=int, default=60, help="bench_live's frame rate (default 60)")
    p.add_argument("--out", default=here)
    a = p.parse_args()
    if a.logs:
        for name, file in (("ncc", "bench_ncc.log"), ("opencv", "opencv_matchtemplate.log"),
                           ("stream", "bench_stream.log"), ("banks", "bench_bank.log"),
                           ("opencv_banks", "opencv_bank.log"), ("producers", "producers.log"),
                           ("live", "bench_live.csv")):
            if getattr(a, name) is None and os.path.exists(os.path.join(a.logs, file)):
                setattr(a, name, os.path.join(a.logs, file))
    if not any((a.ncc, a.stream, a.banks, a.producers, a.live)):
        p.error("no input: give --ncc, --stream, --banks, --producers, --live or --logs")
    os.makedirs(a.out, exist_ok=True)
    made = []
    if a.ncc:
        made.append(plot_ncc(read_input(a.ncc), read_input(a.opencv) if a.opencv else None, a.out))
    if a.stream:
        made.append(plot_bank(read_input(a.stream), a.out))
    if a.banks:
        made.append(plot_bank_baselines(read_input(a.banks), read_input(a.opencv_banks) if a.opencv_banks else None,
                                        a.out))
    if a.producers:
        made.append(plot_producers(read_input(a.producers), a.out))
    if a.live:
        made.append(plot_live(a.live.partition("#")[0], a.fps, a.out))
    for path in made:
        print(path)


if __name__ == "__main__":
    main()
