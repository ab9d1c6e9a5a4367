#!/usr/bin/env bash
# Where a GEMM bank tile's time goes, without hardware counters: bench_bank against its builds that
# do one stage of every tile twice (bench_bank_repeat_*, NCC_GEMM_REPEAT_STAGE in gemm_bank.cu), on
# the same cases, in alternating rounds. A stage's time is the repeated build's sparse launch less
# the plain build's (medians over the rounds); the digests of the sparse outputs must be the plain
# build's (each repeat gives the same results). Hopper only (the repeated builds are sm_90a code).
# A repeated stage may hide partly behind the other block of its SM, so a difference is at most
# what the stage costs the launch, not more. "products" repeats the first slab's products only:
# the digest line says how many slabs a case's templates take.
# Usage: bench/gemm_stages.sh BENCH_DIR [ROUNDS] [CASES]
#   BENCH_DIR: the folder holding bench_bank and bench_bank_repeat_* (gpu-pack/bench)
#   ROUNDS: rounds of every build (default 3); CASES: bench_bank case numbers (default "5 2 7":
#   1080p 64 x 32², 256 x 16², 16 x 64²)
set -euo pipefail
dir=${1:?usage: bench/gemm_stages.sh BENCH_DIR [ROUNDS] [CASES]}
rounds=${2:-3}
cases=${3:-5 2 7}
stages=(tile_load window_sums hankel products fold screen)
for s in "" "${stages[@]}"; do
  b="$dir/bench_bank${s:+_repeat_$s}"
  [ -x "$b" ] || { echo "gemm_stages: $b is missing (build with cuda-arch 90)" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  for s in plain "${stages[@]}"; do
    b="$dir/bench_bank"
    [ "$s" = plain ] || b="$dir/bench_bank_repeat_$s"
    for c in $cases; do
      "$b" --gemm-only --digest --case "$c" >>"$out/$s.txt"
    done
  done
done
python3 - "$out" "${stages[@]}" <<'EOF'
import re, statistics, sys
out, stages = sys.argv[1], sys.argv[2:]

def parse(name):
    rows = []  # (case, label, sparse us, digest)
    label = sparse = None
    for line in open(f'{out}/{name}.txt'):
        m = re.match(r'\| (\d+x\d+) \| (\d+ x \d+x\d+) \| [^|]+ \| [\d.]+ \| ([\d.]+) \|', line)
        if m:
            label, sparse = m.group(1) + ', ' + m.group(2), float(m.group(3))
            continue
        m = re.match(r'digest case (\d+): ([0-9a-f]+)(?: \((.*)\))?', line)
        if m and label is not None:
            rows.append((int(m.group(1)), label + (f' ({m.group(3)})' if m.group(3) else ''), sparse, m.group(2)))
            label = None
    return rows

def summary(name):
    per = {}
    for case, label, sparse, digest in parse(name):
        e = per.setdefault(case, {'label': label, 'times': [], 'digests': set()})
        e['times'].append(sparse)
        e['digests'].add(digest)
    return per

plain = summary('plain')
repeated = {s: summary(s) for s in stages}
if not plain:
    sys.exit('gemm_stages: bench_bank printed no sparse rows (no GPU here?)')
print('| case | stage repeated | sparse µs (median) | the stage | share of the plain launch | outputs |')
print('|---|---|---:|---:|---:|---|')
for case, p in plain.items():
    base = statistics.median(p['times'])
    same = 'digest ' + '/'.join(sorted(p['digests']))[:16]
    print(f"| {p['label']} | none | {base:.1f} | | | {same} |")
    for s in stages:
        e = repeated[s].get(case)
        if e is None:
            print(f"| {p['label']} | {s} | not run | | | |")
            continue
        t = statistics.median(e['times'])
        agree = 'same' if e['digests'] == p['digests'] and len(p['digests']) == 1 else 'DIFFERENT'
        print(f"| {p['label']} | {s} | {t:.1f} | {t - base:+.1f} | {100 * (t - base) / base:+.1f}% | {agree} |")
EOF
