# Sourced by gpu-overlay.sh and gpu-branch-pack.sh: binaries named as the GPU host runs them
# (test_*, bench_*, 'plugin', and sanitizer_* probes such as sanitizer_planted_race) as ninja targets of a build, and those targets copied into a pack's
# tests/, bench/ and plugin/ folders.

# nccmatch_targets BUILD NAME...: sets the array `targets`; status 2, with a message, for a name
# that is none of those or a test the build does not have.
nccmatch_targets() {
  local build=$1 name t
  shift
  targets=()
  for name in "$@"; do
    case $name in
      plugin) targets+=(plugin/libgstnccmatch.so) ;;
      bench_*) targets+=("bench/$name") ;;
      test_* | sanitizer_*)
        # The binary itself (NAME then ':'), not its objects (tests/.../NAME.p/NAME.cpp.o).
        t=$(ninja -C "$build" -t targets all | grep -o "^tests/[^:]*/$name:" | head -1)
        t=${t%:}
        [ -n "$t" ] || { echo "no test binary $name in $build" >&2; return 2; }
        targets+=("$t") ;;
      *) echo "$name: not a test_*, bench_*, sanitizer_* or 'plugin'" >&2; return 2 ;;
    esac
  done
}

# nccmatch_copy_targets BUILD DIR TARGET...: each built target into DIR/tests, DIR/bench or DIR/plugin.
nccmatch_copy_targets() {
  local build=$1 dir=$2 t
  shift 2
  mkdir -p "$dir/tests" "$dir/bench" "$dir/plugin"
  for t in "$@"; do
    case $t in
      plugin/*) cp "$build/$t" "$dir/plugin/" ;;
      bench/*) cp "$build/$t" "$dir/bench/" ;;
      *) cp "$build/$t" "$dir/tests/" ;;
    esac
  done
}
