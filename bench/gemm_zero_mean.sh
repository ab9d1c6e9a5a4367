#!/usr/bin/env bash
# The GEMM bank's two kinds of templates side by side (issue 12): u8 pixels with the per-pair
# screen against s8 T - r with the zero-mean screen (rules/zero_mean_screen.hpp), ccoeff-normed.
# 1. bench_bank --gemm-only --digest on CASES, with and without --zero-mean, in alternating rounds:
#    the sparse launch's medians and whether the outputs hash the same (they must: the screens
#    differ, the exact scores, tile bests and above-threshold bits do not);
# 2. (unless FRAMES=0) bench_stream --banks with --gemm-templates unsigned and zero-mean: the whole
#    per-frame cost through the library, 2 frames in flight (issue 12's measure).
# Ends with one summary table. Usage: bench/gemm_zero_mean.sh BENCH_DIR [ROUNDS] [CASES]
#   BENCH_DIR: the folder holding bench_bank and bench_stream (gpu-pack/bench); ROUNDS: default 3;
#   CASES: bench_bank case numbers (default "0 1 2 4 5 7": 1080p 16/64/256 x 16², 16/64 x 32²,
#   16 x 64²); FRAMES=0 in the environment leaves step 2 out.
set -euo pipefail
dir=${1:?usage: bench/gemm_zero_mean.sh BENCH_DIR [ROUNDS] [CASES]}
rounds=${2:-3}
cases=${3:-0 1 2 4 5 7}
for b in bench_bank bench_stream; do
  [ -x "$dir/$b" ] || { echo "gemm_zero_mean: $dir/$b is missing" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  for c in $cases; do
    "$dir/bench_bank" --gemm-only --digest --case "$c" >>"$out/unsigned.txt"
    "$dir/bench_bank" --gemm-only --digest --zero-mean --case "$c" >>"$out/zero-mean.txt"
  done
done
if [ "${FRAMES:-1}" != 0 ]; then
  "$dir/bench_stream" --banks --gemm-templates unsigned | tee "$out/stream-unsigned.txt"
  "$dir/bench_stream" --banks --gemm-templates zero-mean | tee "$out/stream-zero-mean.txt"
fi
python3 - "$out" <<'EOF'
import os, re, statistics, sys
out = sys.argv[1]

def bank_rows(name):
    per = {}  # case -> label, sparse times, digests
    label = sparse = None
    for line in open(f'{out}/{name}.txt'):
        m = re.match(r'\| (\d+x\d+) \| (\d+ x \d+x\d+) \| [^|]+ \| [\d.]+ \| ([\d.]+) \|', line)
        if m:
            label, sparse = m.group(1) + ', ' + m.group(2), float(m.group(3))
            continue
        m = re.match(r'digest case (\d+): ([0-9a-f]+)', line)
        if m and label is not None:
            e = per.setdefault(int(m.group(1)), {'label': label, 'times': [], 'digests': set()})
            e['times'].append(sparse)
            e['digests'].add(m.group(2))
            label = None
    return per

def stream_rows(name):
    rows = {}  # (frame, bank) -> 2 in flight
    path = f'{out}/{name}.txt'
    if not os.path.exists(path):
        return rows
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) >= 5 and re.match(r'\d+x\d+$', cells[0]) and re.match(r'[\d.]+$', cells[4]):
            rows[(cells[0], cells[1])] = float(cells[4])
    return rows

plain, zero = bank_rows('unsigned'), bank_rows('zero-mean')
if not plain:
    sys.exit('gemm_zero_mean: bench_bank printed no sparse rows (no GPU here?)')
print('\n| case | unsigned sparse µs | zero-mean sparse µs | zero-mean / unsigned | outputs |')
print('|---|---:|---:|---:|---|')
bad = 0
for case, p in plain.items():
    z = zero.get(case)
    a = statistics.median(p['times'])
    if z is None:
        print(f"| {p['label']} | {a:.1f} | not run | | |")
        bad += 1
        continue
    b = statistics.median(z['times'])
    same = len(p['digests']) == 1 and p['digests'] == z['digests']
    bad += not same
    print(f"| {p['label']} | {a:.1f} | {b:.1f} | {b / a:.3f} | {'same' if same else 'DIFFERENT'} |")
su, sz = stream_rows('stream-unsigned'), stream_rows('stream-zero-mean')
if su:
    print('\n| frame | bank | unsigned, 2 in flight µs | zero-mean, 2 in flight µs | zero-mean / unsigned |')
    print('|---|---|---:|---:|---:|')
    for key, a in su.items():
        b = sz.get(key)
        print(f'| {key[0]} | {key[1]} | {a:.1f} | ' + (f'{b:.1f} | {b / a:.3f} |' if b else 'not run | |'))
print(f"\ngemm_zero_mean: {'outputs agree in every case' if bad == 0 else f'{bad} case(s) DIFFER or missing'}")
sys.exit(1 if bad else 0)
EOF
