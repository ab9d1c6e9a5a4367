#!/usr/bin/env bash
# Where a kernel's time can go, from its machine code: registers, shared memory and spills
# (cuobjdump -res-usage), then the SASS opcode counts of every function whose name contains
# PATTERN, most frequent first. Runs where cuobjdump is (the GPU host's toolkit has it).
# Usage: scripts/sass-report.sh BINARY PATTERN [TOP]
set -euo pipefail
bin=$1 pattern=$2 top=${3:-25}
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
"$cuobjdump" -res-usage "$bin" 2>/dev/null | grep -A1 "Function [^ ]*$pattern" | grep -v '^--$' || true
"$cuobjdump" -sass "$bin" 2>/dev/null | awk -v pat="$pattern" -v top="$top" '
  /Function : / { name = $3; keep = index(name, pat) > 0; next }
  keep && /\/\*[0-9a-f]+\*\// {
    line = $0; sub(/^[ \t]*\/\*[0-9a-f]+\*\/[ \t]+/, "", line); sub(/^@!?U?P[0-9T]+[ \t]+/, "", line)
    split(line, w, /[ ;]/); op = w[1]; sub(/\..*/, "", op)
    if (op != "") { count[name " " op]++; total[name]++ }
  }
  END {
    for (f in total) {
      printf "%s: %d instructions\n", f, total[f]
      n = 0
      cmd = "sort -k2 -nr | head -" top
      for (k in count) { split(k, p, " "); if (p[1] == f) printf "  %-10s %d\n", p[2], count[k] | cmd }
      close(cmd)
    }
  }'
