# Summarises region_timeline's output per call: µs from the first gather block's start (min/median/max
# over the blocks; a device frame: from the region kernel's first block, the gather's columns 0), the
# tiles' rows, and the host's phases. Usage: python3 region_timeline.py OUTPUT
import sys, statistics as st
calls, cur = [], None
for line in open(sys.argv[1]):
    f = line.split()
    if not f: continue
    if f[0] == "CALL": cur = {"G": [], "R": [], "host": " ".join(f[2:])}; calls.append(cur); continue
    if f[0] != "TL" or cur is None: continue
    if f[1] == "G": cur["G"].append((int(f[6]), int(f[7])))
    elif f[1] == "R": cur["R"].append(tuple(int(x) for x in f[7:11]) + (int(f[3]),) + tuple(int(x) for x in f[11:15]))
for i, c in enumerate(calls):
    if not c["R"]: print("call", i, "no region stamps"); continue
    # From the gather's first block, or (a device frame: no gather) the region kernel's first.
    t0 = min(g[0] for g in c["G"]) if c["G"] else min(r[0] for r in c["R"])
    us = lambda t: (t - t0) / 1000.0
    gs = [us(g[0]) for g in c["G"]] or [0.0]; ge = [us(g[1]) for g in c["G"]] or [0.0]
    rs = [us(r[0]) for r in c["R"]]; rr = [us(r[1]) for r in c["R"]]; rsc = [us(r[2]) for r in c["R"]]; re = [us(r[3]) for r in c["R"]]
    q = lambda v: "%.1f/%.1f/%.1f" % (min(v), st.median(v), max(v))
    print(f"call {i}: gather start {q(gs)} end {q(ge)} | region start {q(rs)} ready {q(rr)} scored {q(rsc)} end {q(re)} | blocks G {len(c['G'])} R {len(rs)} | {c['host']}")
    # per tile row y: ready and scored medians
    by = {}
    for r in c["R"]: by.setdefault(r[4], []).append(r)
    print("   by tile row: " + " ".join(f"y{y}: ready {st.median([us(r[1]) for r in v]):.1f} scored {st.median([us(r[2]) for r in v]):.1f}" for y, v in sorted(by.items())))
    # the block's phases (µs, min/median/max over the blocks): tile load, window sums (thread 0's
    # group; the numerator's warps work beside it), the numerator's end after them, scores,
    # hand-off (stamps by thread 0)
    if len(c["R"][0]) > 5:
        d = lambda a, b: [(r[b] - r[a]) / 1000.0 for r in c["R"]]
        print("   phases: load " + q(d(1, 5)) + " sums " + q(d(5, 6)) + " numerator after the sums " + q(d(6, 7)) + " scores " + q(d(7, 2)) + " hand-off " + q(d(2, 3)))
    # the SM clock over the block's work (clock64 cycles from ready to end over the same ns)
    if len(c["R"][0]) > 8:
        print("   SM clock MHz, ready to end: " + q([1000.0 * r[8] / max(1, r[3] - r[1]) for r in c["R"]]))
