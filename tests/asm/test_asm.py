"""Below the kernel: each Triton kernel compiled for the run's GPU (sm_90) — TTIR, TTGIR,
PTX, SASS — with line maps back to kernel lines and resource facts.

The end-to-end tests use Hugging Face GPT-2 with transformers' eager attention (a model
nobody here wrote): its softmax line in modeling_gpt2.py must reach `MUFU.EX2` SASS
instructions, with the kernel's registers and spills, down and back up the chain.
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
import textwrap
import types
from pathlib import Path

import pytest
from conftest import DATA, REPO, gpt2_softmax_line
from synthetic_runs import mlp_store, workspace, write_hand_made_build  # noqa: F401 - fixtures

from kernelscope.asm import facts, linemaps
from kernelscope.asm.model import LaunchConfig

KERNEL = "/store/runs/1/graphs/0_0_0-forward/kernels/k.py"
HELPER = "/venv/lib/python3.11/site-packages/triton/language/standard.py"


# -- line maps (no compile) ------------------------------------------------------------------

PTX = textwrap.dedent(f"""\
    .visible .entry k(
    \t.param .u64 .ptr .global .align 1 k_param_0
    )
    {{
    \t.reg .b32 \t%r<4>;
    \t.loc\t1 17 0                          // k.py:17:0
    $L__func_begin0:
    \t.loc\t1 19 28                         // k.py:19:28
    \tmov.u32 \t%r1, %ctaid.x;
    \t.loc\t2 263 15                        // standard.py:263:15 @[ standard.py:293:36 @[ k.py:48:26 ] ]
    \tadd.f32 \t%r2, %r1, %r1;
    \t.loc\t2 263 15                        // standard.py:263:15 @[ standard.py:293:36 @[ k.py:55:26 ] ]
    \t@%p1 add.f32 \t%r3, %r2, %r2;
    \tret;
    $L__tmp1:
    }}
    \t.file\t1 "{KERNEL}"
    \t.file\t2 "{HELPER}"
    \t.section\t.debug_abbrev
    \t{{
    .b8 1;
    \t}}
    """)


def test_ptx_lines_follow_loc_and_inline_chains():
    lines, sites = linemaps.ptx_lines(PTX, KERNEL)
    assert [(line.line, line.kernel_line, line.opcode) for line in lines] == [
        (9, 19, "mov.u32"), (11, 48, "add.f32"), (13, 55, "add.f32"), (14, 55, "ret")]
    assert lines[0].via == "" and lines[1].via == "inlined from triton/language/standard.py:263"
    assert sites == {("standard.py", 263): {48, 55}}


SASS = textwrap.dedent(f"""\
    \t//## File "{KERNEL}", line 19
            /*0000*/                   S2R R0, SR_CTAID.X ;
    \t//## File "{HELPER}", line 263
            /*0010*/                   FADD R2, R0, R0 ;
    .L_x_0:
            /*0020*/              @!P0 MUFU.EX2 R3, R2 ;
    \t//## File "{KERNEL}", line 36
            /*0030*/                   EXIT ;
    """)


def test_sass_lines_map_helper_lines_through_the_ptx_inline_sites():
    lines = linemaps.sass_lines(SASS, KERNEL, {("standard.py", 263): {48, 55}})
    assert [(line.line, line.kernel_line, line.opcode) for line in lines] == [
        (2, 19, "S2R"), (4, 48, "FADD"), (4, 55, "FADD"), (6, 48, "MUFU.EX2"), (6, 55, "MUFU.EX2"), (8, 36, "EXIT")]
    assert lines[1].via == ("inlined from triton/language/standard.py:263 (called from lines 48, 55; "
                            "SASS keeps no call site)")
    assert lines[3].text == "@!P0 MUFU.EX2 R3, R2"
    assert linemaps.sass_instructions(SASS) == ["S2R R0, SR_CTAID.X", "FADD R2, R0, R0", "@!P0 MUFU.EX2 R3, R2", "EXIT"]


MLIR = textwrap.dedent(f"""\
    #loc = loc("{KERNEL}":17:0)
    module {{
      tt.func public @k(%arg0: !tt.ptr<f32> loc("in_ptr0"(#loc))) {{
        %0 = tt.get_program_id x : i32 loc(#loc2)
        %1 = math.exp2 %0 : f32 loc(#loc3)
        %2 = arith.addf %1, %1 : f32 loc(callsite(#loc4 at #loc5))
        %3:2 = "tt.reduce"(%2) <{{axis = 1 : i32}}> ({{
        tt.return loc(#loc6)
      }} loc(#loc)
    }} loc(#loc)
    #loc1 = loc("{KERNEL}":19:28)
    #loc2 = loc("xoffset"(#loc1))
    #loc3 = loc("{KERNEL}":36:24)
    #loc4 = loc("{HELPER}":263:15)
    #loc5 = loc("{KERNEL}":48:26)
    #loc6 = loc(unknown)
    """)


def test_mlir_lines_resolve_named_callsite_and_unknown_locations():
    lines = linemaps.mlir_lines("ttgir", MLIR, KERNEL)
    assert [(line.line, line.kernel_line, line.opcode, line.via) for line in lines] == [
        (4, 19, "tt.get_program_id", ""), (5, 36, "math.exp2", ""),
        (6, 48, "arith.addf", "inlined from triton/language/standard.py:263")]


# -- facts (no compile) ---------------------------------------------------------------------


def test_occupancy_follows_the_sm90_limits():
    # 14 registers, 4 warps: the 64-warp limit binds (16 blocks)
    assert facts.SM90.occupancy(14, 0, 4).active_warps == 64
    assert facts.SM90.occupancy(14, 0, 4).limited_by == "warps"
    # 72 registers: 2304 per warp, 7 warps per quarter of the register file -> 28 warps -> 14 blocks of 2
    heavy = facts.SM90.occupancy(72, 3072, 2)
    assert (heavy.blocks_per_sm, heavy.active_warps, heavy.limited_by) == (14, 28, "registers")
    # 40 registers: 1280 per warp; each quarter of the register file holds 12 warps (not 51 / 4 rounded down later)
    assert facts.SM90.occupancy(40, 0, 2).active_warps == 48
    # 100 KB of shared memory per block (+1 KB reserved): 2 blocks fit in 228 KB
    shared = facts.SM90.occupancy(32, 100 * 1024, 4)
    assert (shared.blocks_per_sm, shared.limited_by) == (2, "shared memory")
    # one warp per block: the 32-block limit binds at half occupancy
    assert (facts.SM90.occupancy(8, 0, 1).active_warps, facts.SM90.occupancy(8, 0, 1).limited_by) == (32, "blocks")


def test_resource_usage_and_instruction_classes():
    text = ("\nResource usage:\n Common:\n  GLOBAL:11 CONSTANT[4]:8\n Function k:\n"
            "  REG:255 STACK:488 SHARED:0 LOCAL:0 CONSTANT[0]:560 TEXTURE:0 SURFACE:0 SAMPLER:0\n")
    assert facts.resource_usage(text, "k") == {"REG": 255, "STACK": 488, "SHARED": 0, "LOCAL": 0, "CONSTANT[0]": 560,
                                               "TEXTURE": 0, "SURFACE": 0, "SAMPLER": 0}
    with pytest.raises(ValueError, match="no function 'other'"):
        facts.resource_usage(text, "other")
    assert [facts.instruction_class(op) for op in ("MUFU.EX2", "HGMMA.64x128x16.F32", "LDG.E.64", "STL", "HFMA2.MMA",
                                                   "FFMA.FTZ", "WHATEVER")] == [
        "special function", "tensor core", "global load", "local memory", "move", "fp32", "other"]
    assert facts.instruction_mix(["MUFU.EX2 R0, R0", "@!P0 MUFU.RCP R1, R1", "FADD R2, R0, R1"]) == {
        "special function": 2, "fp32": 1}
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
           "ptxas info    : Function properties for k\n"
           "    488 bytes stack frame, 696 bytes spill stores, 692 bytes spill loads\n"
           "ptxas info    : Used 255 registers, used 0 barriers, 488 bytes cumulative stack size\n")
    assert facts.ptxas_spills(log, "k") == {"stack": 488, "stores": 696, "loads": 692}
    assert facts.ptxas_spills(log, "other") is None and facts.ptxas_spills("", "k") is None


def test_shared_memory_counts_the_reserved_kilobyte_once(tmp_path):
    """A reduction compiled for sm_90 (no GPU): cuobjdump's SHARED is the block's reserved 1 KB,
    which the occupancy adds; the kernel's shared memory is Triton's own (what an H100's
    launcher reports), not 1 KB more."""
    triton = pytest.importorskip("triton")
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernelscope.asm import tools
    from kernelscope.asm.assemble import CompiledStages, assemble

    source = tmp_path / "reduction.py"
    source.write_text(textwrap.dedent("""\
        import triton
        import triton.language as tl

        @triton.jit
        def row_sum(x_ptr, y_ptr, R: tl.constexpr):
            r = tl.arange(0, R)
            x = tl.load(x_ptr + tl.program_id(0) * R + r)
            tl.store(y_ptr + tl.program_id(0), tl.sum(x, 0))
    """))
    namespace = {"triton": triton, "tl": tl, "__file__": str(source)}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    binary = triton.compile(ASTSource(namespace["row_sum"], signature={"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                                       "R": "constexpr"}, constexprs={"R": 1024}),
                            target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
    assert "SHARED:1024" in tools.resource_usage_text(binary.asm["cubin"])  # the reserved kilobyte
    compiled = CompiledStages(name=binary.metadata.name, arch=90, ttir=binary.asm["ttir"], ttgir=binary.asm["ttgir"],
                              ptx=binary.asm["ptx"], cubin=binary.asm["cubin"], num_warps=8, num_stages=3,
                              shared_bytes=binary.metadata.shared)
    config = LaunchConfig.of({}, 8, 3)
    built = assemble(compiled, str(source), config, [config], "the kernel's only config")
    assert 0 < built.facts.shared_bytes == binary.metadata.shared < 1024
    assert built.facts.occupancy == facts.SM90.occupancy(built.facts.registers, binary.metadata.shared, 8)


# -- the read model of builds (a hand-made build of the synthetic MLP run; no compile) ---------------


def test_builds_read_through_the_run_view(mlp_store):
    from synthetic_runs import GELU_LINE, MLP_PATH

    from kernelscope.errors import UserError

    kernel_file, erf = write_hand_made_build(mlp_store, 1)
    view = mlp_store.run(1)
    status = view.asm_status()
    assert (status.buildable, status.built, status.failed, status.pending) == (2, 1, 0, 1)
    [info] = view.asm_builds().values()
    assert view.asm_builds([info.kernel_id]) == {info.kernel_id: info} and info.facts.registers == 16
    [other] = view.asm_unbuilt()
    assert other != kernel_file and "backward" in other and view.asm_unbuilt([kernel_file]) == []
    sass = info.files["sass"]
    location = view.locate(sass)  # a stage file locates like any file of the run, as kind `asm`
    assert (location.kind, location.kernel, location.line_count, location.graph.kind) == \
        ("asm", info.name, 4, "forward")
    assert view.asm_file(location).stage == "sass" and view.asm_file(kernel_file) is None
    answer = view.asm_line(sass, 3)
    assert (answer.text, answer.kernel_lines) == ("MUFU.EX2 R0, R0", [erf])
    assert (MLP_PATH, GELU_LINE) in {(source.file, source.line) for chain in answer.chains[0].graphs
                                     for source in chain.sources}
    label = view.asm_line(sass, 2)  # a label: no kernel line
    assert (label.text, label.lines, label.chains) == (".L_x_0:", [], [])
    with pytest.raises(UserError, match="out of range"):
        view.asm_line(sass, 5)
    with pytest.raises(UserError, match="answered through their kernel lines"):
        view.query_at(location, 3)
    assert view.file_links(location).lines == []
    below = view.asm_below(kernel_file, [erf], ("sass",))
    assert [line.opcode for line in below.lines] == ["MUFU.EX2"] and below.info.kernel_id == info.kernel_id
    assert view.asm_below(other, [1]).info is None  # not built yet
    with pytest.raises(UserError, match="not a stage file"):
        view.asm_line(kernel_file, 1)


# -- the real build, on a model nobody here wrote ------------------------------------------------


_gpt2_softmax_line = gpt2_softmax_line


@pytest.fixture(scope="module")
def gpt2_store(gpt2_asm):
    """GPT-2 (eager attention) stored, with the kernels of its softmax line built below Triton
    (conftest's gpt2_asm, shared with the front ends' tests)."""
    from kernelscope.store import StoreBackend

    root, _path, _line, files = gpt2_asm
    store = StoreBackend(root)
    yield store, 1, files
    store.close()


@pytest.mark.slow
def test_gpt2_softmax_line_reaches_mufu_ex2_with_registers_and_spills(gpt2_store):
    store, run_id, files = gpt2_store
    path, line = _gpt2_softmax_line()
    result = store.query(path, line, run_id=run_id)
    [kernel] = [kernel for chain in result.graphs for kernel in chain.kernels if kernel.kind == "triton"]
    exp_lines = [ref.line for ref in kernel.lines if "exp" in ref.text]
    assert exp_lines, [ref.text for ref in kernel.lines]
    below = store.asm.below(kernel.file, [ref.line for ref in kernel.lines])
    facts_ = below.info.facts
    assert facts_.arch == "sm_90" and 0 < facts_.registers <= 255 and facts_.spill_bytes == 0
    assert facts_.occupancy.active_warps > 0 and facts_.mix["special function"] >= 1
    assert facts_.config in facts_.candidates and facts_.chosen_by
    exp_sass = [asm for asm in below.stage_lines("sass") if asm.kernel_line in exp_lines]
    assert "MUFU.EX2" in {asm.opcode for asm in exp_sass}
    assert any(asm.opcode.startswith("ex2.approx") for asm in below.stage_lines("ptx") if asm.kernel_line in exp_lines)
    for stage, path_ in below.info.files.items():
        assert path_.startswith(f"runs/{run_id}/asm/") and path_.endswith(f".{stage}")
        assert (store.root / path_).is_file()
    # every SASS instruction of the kernel carries a kernel line
    sass_text = (store.root / below.info.files["sass"]).read_text()
    mapped = {row[0] for row in store.conn.execute(
        "SELECT line FROM asm_lines WHERE kernel_id = ? AND stage = 'sass'", (below.info.kernel_id,))}
    instructions = [number for number, text in enumerate(sass_text.splitlines(), 1)
                    if linemaps._SASS_INSTRUCTION.match(text)]
    assert len(instructions) == facts_.instructions and set(instructions) == mapped


@pytest.mark.slow
def test_a_sass_line_goes_up_to_the_model_line(gpt2_store):
    store, run_id, files = gpt2_store
    path, line = _gpt2_softmax_line()
    kernel_id = store.asm.kernel_ids_of_files(files)[files[0]]
    info = store.asm.infos([kernel_id])[kernel_id]
    mufu = store.conn.execute("SELECT line, kernel_line FROM asm_lines WHERE kernel_id = ? AND stage = 'sass' "
                              "AND opcode = 'MUFU.EX2' ORDER BY line LIMIT 1", (kernel_id,)).fetchone()
    ref = store.asm.locate(info.files["sass"])
    assert (ref.stage, ref.kernel_file, ref.run_id) == ("sass", files[0], run_id)
    [asm_line] = store.asm.lines_at(ref, mufu[0])
    assert asm_line.opcode == "MUFU.EX2" and asm_line.kernel_line == mufu[1]
    up = store.query(ref.kernel_file, asm_line.kernel_line, run_id=run_id, direction="up")
    sources = {(Path(source.file).name, source.line) for chain in up.graphs for source in chain.sources}
    assert ("modeling_gpt2.py", line) in sources


@pytest.mark.slow
def test_dump_carries_the_facts_and_stays_portable(gpt2_store):
    from kernelscope.store import validate_dump

    store, run_id, files = gpt2_store
    data = store.dump(run_id)
    validate_dump(data)
    built = [kernel for graph in data["run"]["graphs"] for kernel in graph["kernels"] if kernel["asm"]]
    assert len(built) == len(files)
    asm = built[0]["asm"]
    assert asm["registers"] > 0 and asm["files"]["sass"]["path"].startswith("asm/")
    text = json.dumps(data)
    assert str(store.root) not in text
    unbuilt = [kernel for graph in data["run"]["graphs"] for kernel in graph["kernels"]
               if kernel["kind"] == "triton" and not kernel["asm"]]
    assert unbuilt and all(kernel["launch"] is None for kernel in unbuilt)


@pytest.mark.slow
def test_a_launched_config_is_the_one_built(gpt2_store):
    """--target cuda stores the config the GPU's autotuner launched; the build compiles
    that one (here a config other than the untimed pick) and says so."""
    from kernelscope.engine.asm_build import KernelToBuild, build_kernel

    store, run_id, files = gpt2_store
    kernel_id = store.asm.kernel_ids_of_files(files)[files[0]]
    info = store.asm.infos([kernel_id])[kernel_id]
    other = [config for config in info.facts.candidates if config != info.facts.config][-1]
    assert other != info.facts.candidates[0]  # neither the untimed pick nor the first config
    path = store.absolute_path(files[0])
    launch = {"config": other.to_dict(), "candidates": [c.to_dict() for c in info.facts.candidates],
              "registers": 40, "spills": 0, "shared_bytes": 0}
    built = build_kernel(KernelToBuild(info.name, str(path), path.read_text(), launch))
    assert built.facts.config == other
    assert built.facts.chosen_by == (
        f"launched on the GPU: the fastest of {len(info.facts.candidates)} configs the GPU timed")
    assert built.facts.gpu == {"registers": 40, "spills": 0, "shared_bytes": 0}
    assert built.facts.config != info.facts.config


def test_attach_gives_each_kernel_its_own_autotuners_launch():
    """Identical kernel names in two graphs: each kernel gets the autotuner whose function
    source its file holds (data objects stand for what Inductor made on the GPU)."""
    from kernelscope.engine import asm_launches
    from kernelscope.run_record import GraphRecord, Kernel

    def autotuner(source, xblock):
        config = types.SimpleNamespace(kwargs={"XBLOCK": xblock}, num_warps=4, num_stages=1)
        launcher = types.SimpleNamespace(config=config, n_regs=20 + xblock, n_spills=0, shared=0)
        fn = types.SimpleNamespace(__name__="triton_poi_fused_0", src=source)
        return types.SimpleNamespace(fn=fn, launchers=[launcher])

    forward = GraphRecord(0, 0, 0, "forward", kernels=[
        Kernel("triton_poi_fused_0", "triton", "header\ndef triton_poi_fused_0(a):\n    x = a + 1\n", [])])
    backward = GraphRecord(0, 0, 0, "backward", kernels=[
        Kernel("triton_poi_fused_0", "triton", "header\ndef triton_poi_fused_0(b):\n    y = b * 2\n", [])])
    seen = [(autotuner("def triton_poi_fused_0(b):\n    y = b * 2\n", 128), [{"kwargs": {"XBLOCK": 128}}], {}),
            (autotuner("def triton_poi_fused_0(a):\n    x = a + 1\n", 256), [{"kwargs": {"XBLOCK": 256}}], {})]
    asm_launches.attach([forward, backward], seen)
    assert forward.kernels[0].launch["config"] == {"kwargs": {"XBLOCK": 256}, "num_warps": 4, "num_stages": 1}
    assert backward.kernels[0].launch["registers"] == 148


def test_launch_config_label_and_round_trip():
    config = LaunchConfig.of({"YBLOCK": 32, "XBLOCK": 64}, 4, 1)
    assert config.label == "XBLOCK=64 YBLOCK=32 num_warps=4 num_stages=1"
    assert LaunchConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


# -- the CLI: first ask through the engine worker --------------------------------------------


@pytest.mark.slow
def test_cli_query_asm_down_and_up_then_show(recordings, run_cli, tmp_path):
    """`query --asm` builds the line's kernels in the engine worker (first ask), prints the
    SASS of the softmax line with the kernel's facts; a SASS line goes back up; `show` lists
    the built kernel's registers."""
    from kernelscope.store import StoreBackend

    with StoreBackend(tmp_path / ".kernelscope") as store:
        run_id = store.write_run(recordings.get_zoo("gpt2", "make_eager_attention"))
        assert store.asm.run_infos(run_id) == {}  # a recording compiles nothing below Triton
    path, line = _gpt2_softmax_line()
    done = run_cli(["query", f"{path}:{line}", "--asm", "--store", str(tmp_path / ".kernelscope")])
    assert done.returncode == 0, done.stderr
    assert "below the kernel: 1 kernel · max " in done.stdout and " · 0 spills" in done.stdout
    assert re.search(r"SASS :\d+  MUFU\.EX2 R\d+, R\d+", done.stdout), done.stdout[-3000:]
    assert "sm_90 · XBLOCK=" in done.stdout and "occupancy" in done.stdout
    sass_line = re.search(r"SASS :(\d+)  MUFU\.EX2", done.stdout).group(1)
    with StoreBackend(tmp_path / ".kernelscope") as store:
        [info] = store.asm.run_infos(run_id).values()
    up = run_cli(["query", f"{tmp_path / '.kernelscope' / info.files['sass']}:{sass_line}",
                  "--store", str(tmp_path / ".kernelscope")])
    assert up.returncode == 0, up.stderr
    assert f"(SASS of kernel {info.name}, run {run_id})" in up.stdout and "MUFU.EX2" in up.stdout
    assert f"modeling_gpt2.py:{line} in eager_attention_forward" in up.stdout
    shown = run_cli(["show", str(run_id), "--store", str(tmp_path / ".kernelscope")])
    assert shown.returncode == 0, shown.stderr
    row = next(text for text in shown.stdout.splitlines() if info.name in text and "num_warps" in text)
    assert f"  {info.facts.registers}  " in row
    as_json = json.loads(run_cli(["query", f"{path}:{line}", "--asm", "--json",
                                  "--store", str(tmp_path / ".kernelscope")]).stdout)
    assert any(asm["opcode"] == "MUFU.EX2" for below in as_json["asm"] for asm in below["lines"])


# -- diff gates, on two real recordings ----------------------------------------------------------


@pytest.fixture(scope="module")
def width_dumps(tmp_path_factory):
    import os
    import subprocess
    import sys

    directory = tmp_path_factory.mktemp("widths")
    shutil.copy(DATA / "asm_widths.py", directory / "asm_widths.py")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    dumps = {}
    for factory in ("make_narrow", "make_wide"):
        done = subprocess.run([sys.executable, "-m", "kernelscope", "compile", f"asm_widths.py:{factory}", "--asm",
                               "--dump", f"{factory}.json", "--target", "virtual-cuda"],
                              cwd=directory, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert "below the kernel: 1 kernel(s) compiled to PTX and SASS" in done.stdout
        dumps[factory] = directory / f"{factory}.json"
    return directory, dumps


@pytest.mark.slow
def test_registers_increase_gate_trips_on_a_wider_kernel(width_dumps, run_cli):
    directory, dumps = width_dumps
    narrow, wide = (json.loads(dumps[name].read_text()) for name in ("make_narrow", "make_wide"))
    [narrow_kernel] = [k for g in narrow["run"]["graphs"] for k in g["kernels"] if k["kind"] == "triton"]
    [wide_kernel] = [k for g in wide["run"]["graphs"] for k in g["kernels"] if k["kind"] == "triton"]
    assert wide_kernel["asm"]["registers"] > narrow_kernel["asm"]["registers"]
    tripped = run_cli(["diff", str(dumps["make_narrow"]), str(dumps["make_wide"]),
                       "--fail-on", "registers-increase,spills-increase"], cwd=directory)
    assert tripped.returncode == 1, tripped.stdout + tripped.stderr
    assert ("registers-increase: TRIPPED" in tripped.stdout
            and f"{narrow_kernel['asm']['registers']} -> {wide_kernel['asm']['registers']} registers per thread"
            in tripped.stdout), tripped.stdout
    assert "spills-increase: ok" in tripped.stdout
    back = run_cli(["diff", str(dumps["make_wide"]), str(dumps["make_narrow"]), "--fail-on", "registers-increase"],
                   cwd=directory)
    assert back.returncode == 0, back.stdout


@pytest.mark.slow
def test_spills_increase_gate_and_a_side_without_builds(width_dumps, run_cli):
    directory, dumps = width_dumps
    data = json.loads(dumps["make_wide"].read_text())
    kernel = next(k for g in data["run"]["graphs"] for k in g["kernels"] if k["kind"] == "triton")
    kernel["asm"]["spill_bytes"] = 64  # as a kernel spilling 16 registers would report
    (directory / "spilling.json").write_text(json.dumps(data))
    tripped = run_cli(["diff", str(dumps["make_wide"]), "spilling.json", "--fail-on", "spills-increase"], cwd=directory)
    assert tripped.returncode == 1 and "spills 0 -> 64 B per thread" in tripped.stdout, tripped.stdout
    for graph in data["run"]["graphs"]:
        for kernel in graph["kernels"]:
            kernel["asm"] = None
    (directory / "unbuilt.json").write_text(json.dumps(data))
    blind = run_cli(["diff", str(dumps["make_wide"]), "unbuilt.json", "--fail-on", "spills-increase"], cwd=directory)
    assert blind.returncode == 1 and "B has no kernel compiled below Triton" in blind.stdout, blind.stdout


@pytest.mark.slow
def test_a_cpu_triton_kernel_is_stored_as_not_buildable(recordings, tmp_path):
    """cpu-triton kernels run on the CPU: the build says so and keeps the reason, once."""
    from kernelscope.engine.asm_build import build_run_asm
    from kernelscope.store import StoreBackend

    with StoreBackend(tmp_path / ".kernelscope") as store:
        run_id = store.write_run(recordings.get("function", device="cpu-triton"))
        summary = build_run_asm(store, run_id)
        assert summary.built == 0 and summary.failed
        assert all("generated for a cpu device, not an NVIDIA GPU" in failure for failure in summary.failed)
        infos = store.asm.run_infos(run_id)
        assert infos and all(info.facts is None and "cpu device" in info.error for info in infos.values())
        assert not (store.root / f"runs/{run_id}/asm").exists()
        assert build_run_asm(store, run_id).failed == []  # stored once: not built again


@pytest.mark.slow
def test_a_reduction_the_gpu_would_also_build_with_a_halved_r0_block(recordings):
    """Inductor's own dynamic R0_BLOCK check, asked with the cubin's registers, says the GPU
    would compile and time a second config: the shown config says so."""
    from kernelscope.engine.asm_build import KernelToBuild, build_kernel

    run = recordings.get_spec(f"{DATA / 'asm_widths.py'}:make_wide_reduction")
    [kernel] = [k for g in run.graphs for k in g.kernels if k.kind == "triton"]
    directory = Path(tempfile.mkdtemp(prefix="kernelscope-test-"))
    path = directory / f"{kernel.name}.py"
    path.write_text(kernel.source)
    built = build_kernel(KernelToBuild(kernel.name, str(path), kernel.source))
    assert built.facts.registers > 32
    assert re.fullmatch(rf"the kernel's only config; but with {built.facts.registers} registers per thread Inductor "
                        r"also compiles R0_BLOCK=\d+ .* \(a halved R0_BLOCK, for occupancy\) and the GPU times them "
                        r"at the first launch: shown is the kernel's own", built.facts.chosen_by), built.facts.chosen_by
    shutil.rmtree(directory)


@pytest.mark.slow
def test_two_runs_of_one_model_dump_the_same_builds(recordings, tmp_path):
    """The stage files name their run's kernel file; the dump's hashes leave the run and
    the machine out, so two runs of one model dump the same below the kernel."""
    from kernelscope.engine.asm_build import build_run_asm
    from kernelscope.store import StoreBackend

    with StoreBackend(tmp_path / ".kernelscope") as store:
        runs = [store.write_run(recordings.get("mlp")) for _ in range(2)]
        for run_id in runs:
            assert build_run_asm(store, run_id).built >= 1
        first, second = (store.dump(run_id) for run_id in runs)
        sass = (store.root / next(iter(store.asm.run_infos(runs[1]).values())).files["sass"]).read_text()
    assert f"runs/{runs[1]}/graphs/" in sass  # the text names its own run's kernel file
    builds = [[kernel["asm"] for graph in dump["run"]["graphs"] for kernel in graph["kernels"] if kernel["asm"]]
              for dump in (first, second)]
    assert builds[0] and builds[0] == builds[1]


@pytest.mark.slow
def test_the_cubin_comes_from_the_ptxas_inductor_points_triton_at(recordings, tmp_path, monkeypatch):
    """Inductor sets TRITON_PTXAS_PATH to torch's own ptxas (a CUDA build of torch ships one)
    before compiling for a GPU; the build asks Inductor's own function, so it runs the same
    ptxas (on the H100 a cu130 torch's ptxas, PTX ISA 9.0, made the GPU's SASS and Triton's
    did not). Here that function points at a ptxas that logs each call."""
    import torch._inductor.runtime.compile_tasks as compile_tasks

    from kernelscope.asm import tools
    from kernelscope.engine.asm_build import KernelToBuild, build_kernel

    real_ptxas = tools.tool_path("ptxas")
    calls = tmp_path / "calls.log"
    logging_ptxas = tmp_path / "ptxas"
    logging_ptxas.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {real_ptxas} "$@"\n')
    logging_ptxas.chmod(0o755)
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    monkeypatch.setattr(compile_tasks, "_set_triton_ptxas_path",
                        lambda: monkeypatch.setenv("TRITON_PTXAS_PATH", str(logging_ptxas)))
    run = recordings.get_spec(f"{DATA / 'asm_widths.py'}:make_wide_reduction")
    [kernel] = [k for g in run.graphs for k in g.kernels if k.kind == "triton"]
    path = tmp_path / f"{kernel.name}.py"
    path.write_text(kernel.source)
    built = build_kernel(KernelToBuild(kernel.name, str(path), kernel.source))
    assert "sm_90" in calls.read_text()  # the cubin was made by the ptxas Inductor chose
    assert built.tools["ptxas"].startswith("release ") and built.tools["ptxas"].endswith(f"({logging_ptxas})")


@pytest.mark.slow
def test_a_device_assert_embeds_the_line_inductor_compiled_and_maps_to_the_stored_line(recordings, tmp_path):
    """Inductor compiles a kernel from its wrapper's string, which has one line before the
    stored file's first: the build compiles that string, so an embedding's device-side assert
    passes the GPU's line number to `__assertfail` (on the H100 the SASS is then the GPU's),
    while the line maps still name the stored file's lines."""
    from kernelscope.engine.asm_build import KernelToBuild, build_kernel

    run = recordings.get_zoo("gpt2", "make_eager_attention")
    kernel = next(k for g in run.graphs for k in g.kernels if k.kind == "triton" and "tl.device_assert" in k.source)
    assert_line = next(number for number, text in enumerate(kernel.source.splitlines(), 1) if "device_assert" in text)
    path = tmp_path / f"{kernel.name}.py"
    path.write_text(kernel.source)
    built = build_kernel(KernelToBuild(kernel.name, str(path), kernel.source))
    ptx = built.stages["ptx"]
    call = ptx.index("__assertfail, (")
    assert re.findall(r"st\.param\.b32\s+\[param2\], (\d+);", ptx[ptx.rindex("{", 0, call):call]) == [
        str(assert_line + 1)]
    calls = {line.kernel_line for line in built.lines if line.stage == "sass" and line.opcode.startswith("CALL")}
    assert calls == {assert_line}
    assert {line.kernel_line for line in built.lines} <= set(range(1, len(kernel.source.splitlines()) + 1))
