#!/usr/bin/env python3
"""The hottest rows of `ncu --page source --csv` tables (bench/ncu_gemm_source.sh): per table, the
executed instructions and stall samples summed between barriers (BAR.SYNC: a kernel's phases), then
the rows holding most of the warp-stall samples, with their share, and for each the stall reasons
that make up most of it. Layout-tolerant: the header is the first
line naming "Warp Stall Sampling"; a line that is not a row of that header (a file's name between
tables) starts a new table.
Usage: bench/ncu_source_summary.py TABLE.csv [TOP]"""
import csv
import io
import sys


def tables(text):
    """(header, rows) for each table in the file."""
    lines = text.splitlines()
    out, header, rows, title = [], None, [], ""
    for line in lines:
        fields = next(csv.reader(io.StringIO(line))) if line.strip() else []
        if "Warp Stall Sampling" in line and any("Warp Stall Sampling" in f for f in fields):
            if header and rows:
                out.append((title, header, rows))
            header, rows = fields, []
        elif header and len(fields) == len(header):
            rows.append(fields)
        elif fields:
            if header and rows:
                out.append((title, header, rows))
                header, rows = None, []
            title = line.strip()
    if header and rows:
        out.append((title, header, rows))
    return out


def number(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return 0.0


def phases(header, rows, samples):
    """Executed warp instructions and samples of each stretch of SASS ending in a barrier, largest first."""
    if "Instructions Executed" not in header:
        return
    executed, source = header.index("Instructions Executed"), header.index("Source")
    stretches, first, ran, sampled = [], 0, 0.0, 0.0
    for k, r in enumerate(rows):
        ran += number(r[executed])
        sampled += number(r[samples])
        if "BAR.SYNC" in r[source] or "EXIT" in r[source] or k == len(rows) - 1:
            stretches.append((ran, sampled, first, k))
            first, ran, sampled = k + 1, 0.0, 0.0
    total_ran = sum(s[0] for s in stretches) or 1.0
    total_sampled = sum(s[1] for s in stretches) or 1.0
    print(f"-- between barriers: {total_ran:.0f} warp instructions executed")
    for ran, sampled, a, b in sorted(stretches, reverse=True)[:8]:
        print(f"   SASS rows {a}-{b}: executed {100 * ran / total_ran:5.1f}%, samples {100 * sampled / total_sampled:5.1f}%")


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    for title, header, rows in tables(open(path, encoding="utf-8", errors="replace").read()):
        samples = next(i for i, h in enumerate(header) if h.startswith("Warp Stall Sampling (All"))
        source = next((i for i, h in enumerate(header) if h.strip() == "Source"), len(header) - 1)
        reasons = [i for i, h in enumerate(header) if h.startswith("stall_") or "Stall" in h and i != samples
                   and "Sampling" not in h]
        total = sum(number(r[samples]) for r in rows)
        if total == 0:
            continue
        print(f"== {title or path}: {len(rows)} rows, {total:.0f} samples")
        phases(header, rows, samples)
        ranked = sorted(rows, key=lambda r: -number(r[samples]))
        for r in ranked[:top]:
            s = number(r[samples])
            if s == 0:
                break
            why = sorted(((number(r[i]), header[i]) for i in reasons), reverse=True)[:3]
            why_text = ", ".join(f"{name} {v:.0f}" for v, name in why if v > 0)
            print(f"{100 * s / total:5.1f}% {s:8.0f}  {r[0][:12]:>12}  {r[source].strip()[:90]}  [{why_text}]")


if __name__ == "__main__":
    main()
