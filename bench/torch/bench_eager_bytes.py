"""Bytes per eager event, raw and gzip: 100 steps of bench_eager.py's model
traced by trace_eager() (default gzip), the file read back.

    python bench/torch/bench_eager_bytes.py [--no-grad]
"""
import glob, gzip, os, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import bench_eager as be
from dftracer.python import dftracer, trace_eager
no_grad = len(sys.argv) > 1 and sys.argv[1] == "--no-grad"
torch.set_num_threads(1)
model = be.make_model(64, 8)
x, y = torch.randn(8, 64), torch.randint(0, 4, (8,))
def step():
    if no_grad:
        with torch.no_grad():
            model(x)
    else:
        be.step(model, x, y)
for _ in range(5):
    step()
d = tempfile.mkdtemp()
log = dftracer.initialize_log(os.path.join(d, "b"), None, -1, enable=True)
with trace_eager():
    for _ in range(100):
        step()
log.finalize()
[p] = [f for f in glob.glob(d + "/*") if f.endswith(".gz")]
raw = gzip.open(p).read()
n = sum(1 for l in raw.splitlines() if b'"ph":"X"' in l and (b'"cat":"aten"' in l or b'"cat":"autograd"' in l))
lines = sum(1 for l in raw.splitlines() if l.startswith(b"{"))
print(f"{'eval' if no_grad else 'train'}: events {lines} (ops+nodes {n}), raw {len(raw)} B = {len(raw)/lines:.1f} B/event, gzip {os.path.getsize(p)} B = {os.path.getsize(p)/lines:.2f} B/event")
