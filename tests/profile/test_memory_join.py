"""The join of a measured step's allocation frames to wrapper lines (profile/memory_join.py):
pure, frames in, lines out."""
from __future__ import annotations

from kernelscope.profile.memory_join import Allocation, join_allocations, snapshot_allocations

FILES = {"0_0_0-forward": "/tmp/torchinductor_me/ab/cabcdef.py", "0_0_0-backward": "/tmp/torchinductor_me/xy/cxyz.py"}


def test_an_allocation_joins_its_innermost_frame_in_a_wrapper_file():
    allocations = [
        Allocation(512, [("/torch/_ops.py", 840), ("/tmp/torchinductor_me/ab/cabcdef.py", 41), ("train.py", 9)]),
        Allocation(1024, [("/tmp/torchinductor_me/ab/cabcdef.py", 41)]),
        # the profiler and a moved cache folder name the file by another path: its name (the hash) joins
        Allocation(2048, [("xy/cxyz.py", 77), ("/tmp/torchinductor_me/ab/cabcdef.py", 50)]),
        Allocation(4096, [("/torch/autograd/graph.py", 825)]),  # the autograd engine's: counted, not joined
    ]
    join = join_allocations(allocations, FILES)
    assert (join.allocations, join.joined, join.joined_bytes) == (4, 3, 512 + 1024 + 2048)
    assert [(line.graph, line.line, line.allocations, line.bytes) for line in join.lines] == [
        ("0_0_0-backward", 77, 1, 2048), ("0_0_0-forward", 41, 2, 1536)]


def test_a_snapshot_gives_its_allocations_with_their_frames():
    snapshot = {"segments": [], "device_traces": [[
        {"action": "alloc", "size": 1024, "frames": [{"filename": "/a/cabcdef.py", "line": 3, "name": "call"}]},
        {"action": "free_requested", "size": 1024, "frames": []},
        {"action": "free_completed", "size": 1024, "frames": []},
        {"action": "alloc", "size": 512},
    ]]}
    assert [(a.bytes, a.frames) for a in snapshot_allocations(snapshot)] == [(1024, [("/a/cabcdef.py", 3)]), (512, [])]
    assert join_allocations(snapshot_allocations(snapshot), FILES).joined == 1
