#!/bin/bash
# Two builds' bench_record, alternated round by round, one thread: the L1 floor, region,
# record-only and op-event rows, CPU ns per event (median over rounds, and the best).
#   bench/core/record_ab.sh <old bench_record> <new bench_record> [rounds, default 5]
set -euo pipefail
OLD=$1; NEW=$2; R=${3:-5}
F='^(Floor_L1|BM_Ours_Region|BM_Ours_RecordOnly|BM_Ours_OpEvent)/manual_time/threads:1$'
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$R"); do
  for t in old new; do
    B=$OLD; [ $t = new ] && B=$NEW
    "$B" --benchmark_filter="$F" --benchmark_format=json --benchmark_min_time=0.2 2>/dev/null |
      python3 -c "import json,sys; [print('$t', b['name'].split('/')[0], b['cpu_ns_per_event']) for b in json.load(sys.stdin)['benchmarks']]"
  done
done | python3 -c "
import sys, statistics, collections
d = collections.defaultdict(list)
for l in sys.stdin:
    t, n, v = l.split(); d[(n, t)].append(float(v))
print('%-20s %8s %8s   %s' % ('row', 'old', 'new', 'CPU ns per event: median of rounds (best old / new)'))
for n in sorted({n for n, _ in d}):
    o, w = d[(n, 'old')], d[(n, 'new')]
    print('%-20s %8.2f %8.2f   (%.2f / %.2f)' % (n, statistics.median(o), statistics.median(w), min(o), min(w)))
"
echo "load average at end $(cut -d' ' -f1-3 /proc/loadavg)"
