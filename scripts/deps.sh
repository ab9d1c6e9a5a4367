# Sourced by demo.sh and test.sh: installs the Debian 12 packages nccmatch needs, if missing.
# As root it uses apt-get; otherwise it says exactly what to install and stops.
nccmatch_packages=(
  g++ meson ninja-build pkg-config libgtest-dev libfftw3-dev
  libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
  python3-gi python3-gst-1.0
  gstreamer1.0-plugins-ugly gstreamer1.0-libav gir1.2-gst-rtsp-server-1.0
  # scripts/fuzz.sh: clang with libFuzzer and the sanitizer runtimes, llvm-symbolizer for reports
  clang libclang-rt-14-dev llvm-14
)

# bench/plots/make-plots.sh only (not the build, the tests or CI): the plots are drawn with matplotlib.
nccmatch_plot_packages=(python3-matplotlib)

# Installs nccmatch_packages, or the packages named as arguments instead (e.g.
# nccmatch_install_deps "${nccmatch_plot_packages[@]}").
nccmatch_install_deps() {
  local missing=()
  local p
  local wanted=("${nccmatch_packages[@]}")
  [ $# -gt 0 ] && wanted=("$@")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "nccmatch: missing Debian packages: ${missing[*]}" >&2
    echo "nccmatch: install them with: sudo apt-get install -y ${missing[*]}" >&2
    return 1
  fi
  echo "nccmatch: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Configures (once) the folder given as $1 and builds the targets named after it (ninja output
# paths such as examples/nccmatch-demo), or everything when none is named.
nccmatch_build() {
  local build=$1
  shift
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" || return 1
  fi
  ninja -C "$build" "$@" || return 1
}
