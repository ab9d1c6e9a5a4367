#!/usr/bin/env bash
# Installs matplotlib if missing (scripts/deps.sh: python3-matplotlib; not needed by the build, the
# tests or CI) and draws the plots of bench/plots/plots.py into bench/plots/.
#   bench/plots/make-plots.sh --logs gpu-logs-gpu-pack [--producers producers.log] ...
#   bench/plots/make-plots.sh --readme      the README's plots, from the tables in bench/RESULTS.md
set -euo pipefail
cd "$(dirname "$0")/../.."
# /usr/bin/python3: the Debian interpreter python3-matplotlib installs into (not a pyenv or venv one).
source scripts/deps.sh
nccmatch_install_deps "${nccmatch_plot_packages[@]}"
if [ "${1:-}" = --readme ]; then
  # The integrated GPU suite run: nccmatch, NPP and OpenCV per template size in one table.
  # Bank size against time, and the producers, from the sections the README names.
  exec /usr/bin/python3 bench/plots/plots.py --ncc "bench/RESULTS.md#Integrated GPU suite, one run" \
    --stream "bench/RESULTS.md#Session 9, run 8 on the H200" --producers "bench/RESULTS.md#Session 22 on the H200" \
    --banks "bench/RESULTS.md#Session 30, the bank baselines as printed" \
    --opencv-banks "bench/RESULTS.md#Session 30, the bank baselines as printed"
fi
exec /usr/bin/python3 bench/plots/plots.py "$@"
