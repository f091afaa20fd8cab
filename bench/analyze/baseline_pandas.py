"""The Python baseline: what a user writes with the standard library and pandas.

Reads a .pfw / .pfw.gz line by line with json.loads, keeps the columns a
summary needs, and computes the same per-name summary as
`dftracer-analyze summary` (count, total, mean, min, p50, p95, max).
Usage: baseline_pandas.py TRACE  -> prints "events=N groups=G" on success.
"""
import gzip
import json
import sys

import pandas as pd


def main(path: str) -> None:
    names, durs = [], []
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            s = line.strip().rstrip(",")
            if not s or s in ("[", "]"):
                continue
            e = json.loads(s)
            if e.get("ph") != "X":
                continue
            names.append(e["name"])
            durs.append(float(e["dur"]))
    df = pd.DataFrame({"name": names, "dur": durs})
    g = df.groupby("name")["dur"]
    summary = pd.DataFrame({
        "count": g.count(), "total": g.sum(), "mean": g.mean(), "min": g.min(),
        "p50": g.quantile(0.5), "p95": g.quantile(0.95), "max": g.max(),
    }).sort_values("total", ascending=False)
    print(f"events={len(df)} groups={len(summary)}")


if __name__ == "__main__":
    main(sys.argv[1])
