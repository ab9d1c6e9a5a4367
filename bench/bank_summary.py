#!/usr/bin/env python3
"""Summaries of bench_bank runs for bench/gemm_stages.sh and bench/gemm_zero_mean.sh: both read
bench_bank --gemm-only --digest output (a table row, then its "digest case N: HASH" line) and
compare builds or kinds of templates by the sparse launch's median time and the outputs' digests.

  bank_summary.py stages OUT STAGE...   OUT/plain.txt against OUT/STAGE.txt for each stage
  bank_summary.py zero-mean OUT         OUT/unsigned.txt against OUT/zero-mean.txt, then the
                                        bench_stream --banks tables OUT/stream-*.txt if present
  bank_summary.py ab OUT KIND...        bench/gemm_ab.sh: OUT/base-KIND.txt against OUT/new-KIND.txt
                                        for each kind of templates (unsigned, zero-mean)
Exit status 1 when a comparison's outputs differ or bench_bank printed no rows."""
import os
import re
import statistics
import sys


def bank_cases(path):
    """case -> {'label', 'times' (sparse µs, one a run), 'digests' (set)} from bench_bank output."""
    per = {}
    label = sparse = None
    for line in open(path):
        m = re.match(r'\| (\d+x\d+) \| (\d+ x \d+x\d+) \| [^|]+ \| [\d.]+ \| ([\d.]+) \|', line)
        if m:
            label, sparse = m.group(1) + ', ' + m.group(2), float(m.group(3))
            continue
        m = re.match(r'digest case (\d+): ([0-9a-f]+)(?: \((.*)\))?', line)
        if m and label is not None:
            if m.group(3):
                label += f' ({m.group(3)})'
            e = per.setdefault(int(m.group(1)), {'label': label, 'times': [], 'digests': set()})
            e['times'].append(sparse)
            e['digests'].add(m.group(2))
            label = None
    return per


def same_outputs(base, other):
    return len(base['digests']) == 1 and other['digests'] == base['digests']


def paired(base, other):
    """(label, base median, other median or None where not run, outputs the same) per case of base."""
    for case, b in base.items():
        e = other.get(case)
        t = statistics.median(e['times']) if e else None
        yield b['label'], statistics.median(b['times']), t, e is not None and same_outputs(b, e)


def stages(out, names):
    plain = bank_cases(f'{out}/plain.txt')
    if not plain:
        sys.exit('gemm_stages: bench_bank printed no sparse rows (no GPU here?)')
    repeated = {s: bank_cases(f'{out}/{s}.txt') for s in names}
    differ = 0
    print('| case | stage repeated | sparse µs (median) | the stage | share of the plain launch | outputs |')
    print('|---|---|---:|---:|---:|---|')
    for case, p in plain.items():
        base = statistics.median(p['times'])
        print(f"| {p['label']} | none | {base:.1f} | | | digest {'/'.join(sorted(p['digests']))[:16]} |")
        for s in names:
            e = repeated[s].get(case)
            if e is None:
                print(f"| {p['label']} | {s} | not run | | | |")
                continue
            t = statistics.median(e['times'])
            same = same_outputs(p, e)
            differ += not same
            print(f"| {p['label']} | {s} | {t:.1f} | {t - base:+.1f} | {100 * (t - base) / base:+.1f}% | "
                  f"{'same' if same else 'DIFFERENT'} |")
    return differ


def stream_rows(path):
    """(frame, bank) -> µs a frame with 2 in flight, from a bench_stream table."""
    rows = {}
    if not os.path.exists(path):
        return rows
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) >= 5 and re.match(r'\d+x\d+$', cells[0]) and re.match(r'[\d.]+$', cells[4]):
            rows[(cells[0], cells[1])] = float(cells[4])
    return rows


def zero_mean(out):
    plain, zero = bank_cases(f'{out}/unsigned.txt'), bank_cases(f'{out}/zero-mean.txt')
    if not plain:
        sys.exit('gemm_zero_mean: bench_bank printed no sparse rows (no GPU here?)')
    differ = 0
    print('\n| case | unsigned sparse µs | zero-mean sparse µs | zero-mean / unsigned | outputs |')
    print('|---|---:|---:|---:|---|')
    for label, a, b, same in paired(plain, zero):
        differ += not same
        print(f"| {label} | {a:.1f} | " +
              (f"{b:.1f} | {b / a:.3f} | {'same' if same else 'DIFFERENT'} |" if b is not None else 'not run | | |'))
    su, sz = stream_rows(f'{out}/stream-unsigned.txt'), stream_rows(f'{out}/stream-zero-mean.txt')
    if su:
        print('\n| frame | bank | unsigned, 2 in flight µs | zero-mean, 2 in flight µs | zero-mean / unsigned |')
        print('|---|---|---:|---:|---:|')
        for key, a in su.items():
            b = sz.get(key)
            print(f'| {key[0]} | {key[1]} | {a:.1f} | ' + (f'{b:.1f} | {b / a:.3f} |' if b else 'not run | |'))
    print(f"\ngemm_zero_mean: {'outputs agree in every case' if differ == 0 else f'{differ} case(s) DIFFER or missing'}")
    return differ


def ab(out, kinds):
    differ = 0
    print('| case | templates | base sparse µs | new sparse µs | new / base | outputs |')
    print('|---|---|---:|---:|---:|---|')
    for kind in kinds:
        base, new = bank_cases(f'{out}/base-{kind}.txt'), bank_cases(f'{out}/new-{kind}.txt')
        if not base:
            sys.exit('gemm_ab: bench_bank printed no sparse rows (no GPU here?)')
        for label, a, t, same in paired(base, new):
            differ += not same
            print(f"| {label} | {kind} | {a:.1f} | " +
                  (f"{t:.1f} | {t / a:.3f} | {'same' if same else 'DIFFERENT'} |" if t is not None else 'not run | | |'))
    print(f"\ngemm_ab: {'outputs agree in every case' if differ == 0 else f'{differ} case(s) DIFFER or missing'}")
    return differ


if __name__ == '__main__':
    if len(sys.argv) >= 3 and sys.argv[1] == 'stages':
        sys.exit(1 if stages(sys.argv[2], sys.argv[3:]) else 0)
    if len(sys.argv) >= 4 and sys.argv[1] == 'ab':
        sys.exit(1 if ab(sys.argv[2], sys.argv[3:]) else 0)
    if len(sys.argv) == 3 and sys.argv[1] == 'zero-mean':
        sys.exit(1 if zero_mean(sys.argv[2]) else 0)
    sys.exit(__doc__)
