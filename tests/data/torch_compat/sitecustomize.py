"""torch 2.13 compatibility for torchtitan 0.3.0's trainer, put on PYTHONPATH by
tests/engine/test_torchtitan_trainer.py (torchtitan itself is run unmodified).

torchtitan 0.3.0 calls `torch.distributed.set_timeout(timeout, group)` after the first step
(torchtitan/distributed/utils.py, `set_pg_timeouts`); that module-level function is newer
than torch 2.13 (torch 2.14 has it). Where it is missing it is torch's own
`distributed_c10d._set_pg_timeout`, which on the fake process group only warns that
setting a timeout is supported for nccl and gloo.
"""
try:
    import torch.distributed as _dist

    if _dist.is_available() and not hasattr(_dist, "set_timeout"):
        from torch.distributed.distributed_c10d import _set_pg_timeout

        _dist.set_timeout = _set_pg_timeout
except ImportError:
    pass
