#!/bin/bash
# Instructions per record call (callgrind) of one or more builds of libdftracer_core, side by side:
#   bench/core/record_instructions.sh <build dir> [<build dir> ...]
# Each build dir is a CMake build of this project (its src/core/libdftracer_core.so is used);
# counts only the calls themselves (callgrind --toggle-collect), over 200,000 calls.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
N=200000
WORK=$(mktemp -d /tmp/dft-record-instr-XXXXXX)
trap 'rm -rf "$WORK" /tmp/dft-record-loop' EXIT
mkdir -p /tmp/dft-record-loop
printf '%-40s %10s %10s %10s\n' build region record op
for B in "$@"; do
  LIB=$(cd "$B/src/core" && pwd)
  gcc -O2 -I"$HERE/../../include" "$HERE/record_loop.c" -L"$LIB" -ldftracer_core -Wl,-rpath,"$LIB" -o "$WORK/loop"
  row=()
  for mode in region record op; do
    if [ $mode = region ]; then T=(--toggle-collect=dft_region_begin --toggle-collect=dft_region_end)
    else T=(--toggle-collect=dft_complete_ticks); fi
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" "${T[@]}" "$WORK/loop" $N $mode 2>/dev/null
    ir=$(callgrind_annotate "$WORK/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
    row+=("$(python3 -c "print(round($ir/($N+1),1))")")
  done
  printf '%-40s %10s %10s %10s\n' "$B" "${row[@]}"
done
