"""The Inductor backend's capture: compiled graphs run by Inductor
(inductor_backend) and their kernels as events (inductor_kernels). Shares the
compile capture's graph table and op marks (dftracer.python.compile).
"""
