# Shortens a build log to its progress: of ninja's "[N/M] ..." step lines,
# one line every 10 % ("demo:   build step N of M (P%)"), and the last one;
# everything else is dropped (scripts/demo.sh keeps the whole log for errors).
/^ *\[[0-9]+\/[0-9]+\] / {
  s = $0
  sub(/^ *\[/, "", s)
  split(s, f, /[\/\]]/)
  n = f[1] + 0
  t = f[2] + 0
  if (t > 0 && (int(100 * n / t) >= last + 10 || n == t)) {
    last = int(100 * n / t)
    printf "demo:   build step %d of %d (%d%%)\n", n, t, last
    fflush()
  }
}
