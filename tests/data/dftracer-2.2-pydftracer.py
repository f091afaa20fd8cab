# Writes a DFTracer 2.2 trace (pydftracer 2.0.6 + dftracer 2.2.0 from PyPI):
#   DFTRACER_ENABLE=1 DFTRACER_INC_METADATA=1 .venv-ref/bin/python gen.py PREFIX
# (.venv-ref: the reference venv scripts/setup.sh creates; pydftracer and dftracer are MIT-licensed)
import sys, time
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(logfile=sys.argv[1], data_dir=None, process_id=-1)
compute = dft_fn("COMPUTE")

@compute.log
def step(i):
    time.sleep(0.0002)
    return i

for epoch in range(2):
    with dft_fn("TRAIN", name="epoch"):
        for i in range(3):
            step(i)
log.log_metadata_event("model", "tiny")
log.finalize()
