"""torch.distributed capture: each process's rank metadata (ranks), its
clock offset to rank 0 (clock_sync), collectives and point-to-point calls
(collectives) and DDP's gradient buckets (ddp).
"""
