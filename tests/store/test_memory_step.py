"""The step's peak from the wrappers (store/parts/memory_step.py) and a backward's own
inputs freed at its `del` (compile_text/wrapper_memory.py): pure, on wrapper text."""
from __future__ import annotations

from kernelscope.compile_text.wrapper_memory import owned_inputs, read_timeline
from kernelscope.store.parts.memory_step import StepGraph, graph_top, step_peak

# The call body of a real backward wrapper (examples/mlp.py, train, virtual-cuda), cut down:
# a saved activation and the tangent are deleted after their last use; a weight is not freed.
BACKWARD = '''
class Runner:
    def call(self, args):
        primals_6, addmm, div, tangents_1 = args
        args.clear()
        with torch.cuda._DeviceGuard(0):
            tangents_1 = copy_if_misaligned(tangents_1)
            buf1 = empty_strided_cuda((16, 64), (64, 1), torch.float32)
            triton_per_fused__softmax_backward_data_0.run(tangents_1, div, buf1, 16, 64, stream=raw_stream0)
            del div
            del tangents_1
            buf2 = empty_strided_cuda((16, 128), (128, 1), torch.float32)
            extern_kernels.mm(buf1, primals_6, out=buf2)
            del primals_6
            buf3 = reinterpret_tensor(addmm, (16, 128), (128, 1), 0); del addmm  # reuse
            triton_poi_fused_1.run(buf3, buf2, stream=raw_stream0)
            del buf1
            del buf2
        return (buf3, )
'''
SIZES = {"primals_6": 32768, "addmm": 8192, "div": 4096, "tangents_1": 4096,
         "buf1": 4096, "buf2": 8192, "buf3": 8192}
INPUTS = ["primals_6", "addmm", "div", "tangents_1"]


def test_a_backward_owns_its_saved_activations_and_tangents_not_its_primals():
    assert owned_inputs(True, INPUTS) == {"addmm", "div", "tangents_1"}
    assert owned_inputs(False, INPUTS) == frozenset()  # a forward's inputs are all the caller's


def test_owned_inputs_are_freed_at_their_del_and_their_storage_reused():
    timeline = read_timeline(BACKWARD, SIZES, INPUTS, owned_inputs(True, INPUTS))
    steps = [(action, name, change, live) for _, action, name, change, live in timeline.events]
    everything = 32768 + 8192 + 4096 + 4096
    assert steps == [
        ("allocate", "buf1", 4096, everything + 4096),
        ("free", "div", -4096, everything),
        ("free", "tangents_1", -4096, everything - 4096),
        ("allocate", "buf2", 8192, everything + 4096),
        # `del primals_6` frees nothing: the caller holds the weight
        ("reuse", "buf3", 0, everything + 4096),  # buf3 takes the saved addmm's storage: no new bytes
        ("free", "buf1", -4096, everything),
        ("free", "buf2", -8192, everything - 8192),
    ]
    assert (timeline.peak_bytes, timeline.peak_line) == (everything + 4096, 8)
    assert timeline.spans["div"].freed_line == 10 and timeline.spans["addmm"].reused_by == "buf3"


def test_the_same_wrapper_with_every_input_held_frees_none_of_them():
    timeline = read_timeline(BACKWARD, SIZES, INPUTS)
    assert [name for _, action, name, _, _ in timeline.events if action == "free"] == ["buf1", "buf2"]
    # without the reuse of an owned input, `reinterpret_tensor(addmm, ...)` of an input is a new storage
    assert ("allocate", "buf3") in [(action, name) for _, action, name, _, _ in timeline.events]


def _graph(key, kind, events, inputs, outputs=()):
    return StepGraph(key, kind, "0/0", events, inputs, list(outputs))


def test_the_step_drops_unsaved_outputs_before_the_backward_and_frees_what_the_backward_consumes():
    # forward: buf0 (saved, 8 KiB) and buf1 (the user's output, 4 KiB, not saved) on top of the weights
    forward = _graph("f", "forward", [(10, "allocate", 8192), (11, "allocate", 4096)],
                     [("primals_1", 32768)], outputs=[8192, 4096])
    # backward: the saved buf0 (as `addmm`) and the tangent, freed as it goes; it returns a 32 KiB grad
    backward = _graph("b", "backward", [(20, "allocate", 32768), (21, "free", -8192), (22, "free", -4096),
                                        (23, "allocate", 512)],
                      [("primals_1", 32768), ("addmm", 8192), ("tangents_1", 4096)], outputs=[32768, 512])
    assert graph_top(forward) == (12288, 11)
    assert graph_top(backward) == (8192 + 4096 + 32768, 20)  # its own inputs from the start, the grad on top
    assert step_peak([forward, backward]).bytes == 45056
    assert (step_peak([forward, backward]).graph, step_peak([forward, backward]).line) == ("b", 20)
    # rounded to the allocator's 512-byte blocks, every allocation and owned input is its block
    assert step_peak([forward, backward], size=lambda n: -(-n // 4096) * 4096).bytes == 45056


def test_a_second_graph_pair_holds_the_first_pairs_saved_activations():
    first_f = _graph("f0", "forward", [(1, "allocate", 1000)], [("primals_1", 64)], outputs=[1000])
    first_b = StepGraph("b0", "backward", "0/0", [(2, "allocate", 64)], [("mul", 1000), ("tangents_1", 10)], [64])
    second_f = StepGraph("f1", "forward", "1/0", [(1, "allocate", 300)], [("primals_1", 10)], [300])
    second_b = StepGraph("b1", "backward", "1/0", [(2, "allocate", 10)], [("relu", 300), ("tangents_1", 300)], [10])
    peak = step_peak([first_f, first_b, second_f, second_b])
    # the second forward runs while the first pair's 1000 saved bytes wait for their backward
    assert graph_top(second_f)[0] == 300
    # second backward (runs first): 1000 held + its 300 saved + 300 tangent + 10 grad; then the first
    # backward: its 1000 saved + 10 tangent + 64 + the second backward's 10-byte grad
    assert peak.bytes == max(1300, 1000 + 300 + 300 + 10, 1000 + 10 + 64 + 10) == 1610
    assert peak.graph == "b1"
