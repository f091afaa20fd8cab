"""pydftracer's `dft_ai` annotations: ``from dftracer.python.ai import ai``.

    from dftracer.python.ai import ai as dft_ai

    @dft_ai.compute.forward
    def forward(x): ...

    for epoch in dft_ai.pipeline.epoch.iter(range(3)):
        for batch in dft_ai.dataloader.fetch.iter(loader):
            with dft_ai.compute.backward:
                loss.backward()

The nodes and their event names are in ai_common.py; this module makes the
process's one tree and exports its categories under pydftracer's names.
"""
from .ai_common import *  # noqa: F401,F403
from .ai_common import AI, __all__ as _common_all

ai = AI()
dft_ai = ai  # the name pydftracer's documentation uses for the tree
comm = ai.comm
compute = ai.compute
data = ai.data
dataloader = ai.dataloader
device = ai.device
checkpoint = ai.checkpoint
pipeline = ai.pipeline
other = ai.other

__all__ = list(_common_all) + [
    "ai", "dft_ai", "comm", "compute", "data", "dataloader", "device", "checkpoint",
    "pipeline", "other",
]
