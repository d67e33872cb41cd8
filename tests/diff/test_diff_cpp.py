"""`kernelscope diff` of C++ kernels (Inductor's CPU backend, `--target cpu`): how each was
vectorized, and the `vectorization-lost` gate (kernelscope/diff/vectorization.py).

The fast tests read loop nests out of C++ kernel code (no torch); the slow ones record
examples/swiglu_mlp.py on `--target cpu` three times, as Inductor's vector ISA is picked
(`config.cpp.simdlen`): the machine's widest (AVX-512 here: 16 float lanes), AVX2 (simdlen
256: 8 lanes) and none (simdlen 1: Inductor writes the loop scalar), and diff the stored runs.
"""
from __future__ import annotations

import json

import pytest
from conftest import REPO, example_line

import kernelscope.cli
from kernelscope.asm.model import CppLoop
from kernelscope.asm.x86 import cpp_loops
from kernelscope.diff.vectorization import Nest, VectorizationDiff, gate_reasons, nests
from kernelscope.store import StoreBackend

KERNEL = "cpp_fused_mul_silu_0"

TWO_NESTS = """\
{
    #pragma omp parallel
    {
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(1L))
        {
            for(int64_t x1=static_cast<int64_t>(0L); x1<static_cast<int64_t>(32L); x1+=static_cast<int64_t>(16L))
            {
                auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + x1, static_cast<int64_t>(16));
                tmp0.store(out_ptr0 + static_cast<int64_t>(x1));
            }
        }
        for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(64L); x0+=static_cast<int64_t>(1L))
        {
            auto tmp0 = in_ptr1[static_cast<int64_t>(x0)];
            out_ptr1[static_cast<int64_t>(x0)] = tmp0;
        }
    }
}
"""


def test_a_nest_is_vectorized_when_a_loop_inside_it_is():
    found = nests(tuple(cpp_loops(TWO_NESTS)))
    assert found == [Nest(4, 16), Nest(12, 0)]
    assert [nest.text for nest in found] == ["line 4: vectorized, 16 lanes", "line 12: scalar"]
    assert nests(()) == []
    assert nests((CppLoop(3, 9, "x0", 8, "vectorized"),)) == [Nest(3, 8)]


def test_kernels_with_another_count_of_nests_compare_whole():
    from kernelscope.diff.vectorization import _losses

    lost, gained = _losses([Nest(4, 16), Nest(12, 16)], [Nest(4, 8), Nest(9, 0), Nest(20, 8)])
    assert lost == ["widest 16 -> 8 lanes"] and gained == []
    lost, gained = _losses([Nest(4, 16), Nest(12, 16)], [Nest(4, 16)])
    assert lost == ["2 of 2 nests vectorized -> 1 of 1"] and gained == []


def test_the_gate_does_not_pass_on_kernels_without_their_loops():
    blind = VectorizationDiff(None, None, kernels_before=1, kernels_after=1, unknown_before=1, unknown_after=0,
                              unchanged=1)
    [reason] = gate_reasons(blind)
    assert reason.startswith("vectorization-lost: A has C++ kernels without their loops (a dump older than 9.0)")
    assert gate_reasons(None) == []  # no C++ kernel on either side: nothing to lose


# -- slow: examples/swiglu_mlp.py recorded for the CPU with three vector ISAs ---------------------


@pytest.fixture(scope="module")
def simd_store(recordings, tmp_path_factory):
    """Runs 1, 2, 3: the machine's own vector ISA, simdlen 256 (AVX2), simdlen 1 (none)."""
    import torch._inductor.config as inductor_config

    from kernelscope.engine.recorder import RecordOptions, record_factory

    store_dir = tmp_path_factory.mktemp("cpp_diff") / ".kernelscope"
    with StoreBackend(store_dir) as store:
        assert store.write_run(recordings.get("swiglu_mlp", device="cpu")) == 1
        for simdlen in (256, 1):
            with inductor_config.patch({"cpp.simdlen": simdlen}):
                run = record_factory(f"{REPO}/examples/swiglu_mlp.py:make", RecordOptions(device="cpu", workspace=REPO))
            store.write_run(run)
    return store_dir


def _diff(store_dir, *args: str) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = kernelscope.cli.main(["diff", *args, "--store", str(store_dir)])
    return code, out.getvalue()


def _widest_isa(store_dir) -> dict:
    with StoreBackend(store_dir) as store:
        return store.run(1).dump()["run"]["config"]["cpu_vec_isa"]


@pytest.mark.slow
def test_the_dump_has_each_cpp_kernels_loops_and_the_runs_vector_isa(simd_store):
    with StoreBackend(simd_store) as store:
        runs = [store.run(run_id).dump()["run"] for run_id in (1, 2, 3)]
    isas = [run["config"]["cpu_vec_isa"] for run in runs]
    assert isas[1:] == [{"name": "avx2", "bits": 256}, {"name": "none", "bits": 0}]
    assert isas[0]["bits"] >= 256  # the machine's widest: avx512 where the CPU has it
    loops = [[loop for graph in run["graphs"] for kernel in graph["kernels"] if kernel["name"] == KERNEL
              for loop in kernel["cpp_loops"]] for run in runs]
    assert [(loop["kind"], loop["step"]) for loop in loops[1]] == [("vectorized", 8)]
    assert [(loop["kind"], loop["step"]) for loop in loops[2]] == [("scalar", 1)]
    assert [(loop["kind"], loop["step"]) for loop in loops[0]] == [("vectorized", isas[0]["bits"] // 32)]
    from kernelscope.store import validate_dump

    with StoreBackend(simd_store) as store:
        for run_id in (1, 2, 3):
            validate_dump(store.run(run_id).dump())
    extern = [kernel for graph in runs[0]["graphs"] for kernel in graph["kernels"] if kernel["kind"] == "extern"]
    assert extern and all(kernel["cpp_loops"] is None for kernel in extern)


@pytest.mark.slow
def test_same_runs_pass_the_gate_and_a_scalar_kernel_trips_it(simd_store):
    code, out = _diff(simd_store, "1", "1", "--fail-on", "vectorization-lost")
    assert code == 0 and "vectorization-lost: ok" in out and "C++ kernels" not in out

    code, out = _diff(simd_store, "2", "3", "--fail-on", "vectorization-lost")
    silu = f"examples/swiglu_mlp.py:{example_line('swiglu_mlp', 'F.silu(')}"
    assert code == 1, out
    assert "C++ kernels: 1 -> 1 · vector ISA avx2 (256-bit) -> no vector ISA (every kernel scalar)" in out
    assert f"  {KERNEL} [0/0] inference: changed (size)" in out
    assert "      nests: line 12: vectorized, 8 lanes  ->  line 12: scalar" in out
    assert "vectorization-lost: TRIPPED" in out
    assert f"{KERNEL} [0/0] inference: nest at line 12: vectorized (8 lanes) -> scalar at " in out
    assert silu in out

    code, out = _diff(simd_store, "2", "3", "--fail-on", "vectorization-lost", "--format", "md")
    assert code == 1 and "#### C++ kernels and their vectorization" in out and "❌ `vectorization-lost`" in out

    code, out = _diff(simd_store, "3", "2", "--fail-on", "vectorization-lost")  # B gained it back
    assert code == 0 and "gained: nest at line 12: scalar -> vectorized (8 lanes)" in out


@pytest.mark.slow
def test_a_narrower_vector_isa_trips_the_gate_in_json(simd_store):
    widest = _widest_isa(simd_store)
    if widest["bits"] <= 256:
        pytest.skip(f"this CPU's widest vector ISA is {widest['name']}: no narrower one to pick than AVX2")
    lanes = widest["bits"] // 32
    code, out = _diff(simd_store, "1", "2", "--fail-on", "vectorization-lost", "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1
    vector = data["vectorization"]
    assert (vector["isa_before"], vector["isa_after"]) == (widest, {"name": "avx2", "bits": 256})
    [change] = vector["changes"]
    assert (change["status"], change["before"], change["after"]) == ("vectorization", KERNEL, KERNEL)
    assert (change["nests_before"], change["nests_after"]) == ([{"line": 12, "lanes": lanes}],
                                                               [{"line": 12, "lanes": 8}])
    assert change["lost"] == [f"nest at line 12: {lanes} -> 8 lanes"]
    [gate] = data["gates"]
    assert gate["gate"] == "vectorization-lost" and gate["tripped"]
    assert gate["reasons"][0].startswith(f"{KERNEL} [0/0] inference: nest at line 12: {lanes} -> 8 lanes")
