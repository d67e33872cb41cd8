"""A program's own Triton kernels, line for line: each line of the copy Inductor writes into
the wrapper links to the user's kernel line it was copied from (and back), its launch line to
the launching node and the program's call line, and the autotune config the run launched is
in the answers (`query`, `query --json`, `show`).

examples/user_triton_kernel.py is recorded once per session (conftest's `user_triton_store`):
training one step (forward and backward) and for inference (`--eval`)."""
from __future__ import annotations

import pytest
from conftest import EXAMPLES

from kernelscope.api.store import Store
from kernelscope.engine.user_kernels import add_gpu_choices
from kernelscope.run_record import GraphRecord, Kernel, SourceLocation, UserKernel
from kernelscope.store import validate_dump

EXAMPLE = "examples/user_triton_kernel.py"
FIRST_CONFIG = {"BLOCK": 256, "num_warps": 4, "num_stages": 3}  # the first of the example's @triton.autotune configs


def _user_line(needle: str, after: str) -> int:
    """The 1-based example line containing `needle`, the first after the line containing `after`."""
    lines = (EXAMPLES / "user_triton_kernel.py").read_text().splitlines()
    start = next(number for number, text in enumerate(lines) if after in text)
    return next(number for number, text in enumerate(lines[start:], start + 1) if needle in text)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["train", "inference"])
def test_every_user_kernel_line_links_to_the_users_source_and_the_floors_hold(user_triton_store, mode):
    root, runs = user_triton_store
    with Store(root) as store:
        run = store.run(runs[mode])
        kernels = run.user_kernels
        names = {(kernel.graph.kind, kernel.function) for kernel in kernels}
        expected = {("inference", "silu_forward_kernel"), ("inference", "axpby_kernel")} if mode == "inference" else {
            ("forward", "silu_forward_kernel"), ("forward", "axpby_kernel"),
            ("backward", "silu_backward_kernel"), ("backward", "axpby_kernel")}
        assert names == expected
        linked, total = run.view.user_kernel_line_counts()
        assert total > 0 and linked == total, (linked, total)
        coverage = run.summary.coverage
        assert coverage["kernel_lines"]["share"] >= 0.95 and coverage["wrapper_lines"]["share"] >= 0.95
        assert coverage["forward_nodes_with_source"]["share"] == 1.0
        if mode == "train":
            assert coverage["backward_nodes_with_source"]["share"] == 1.0


@pytest.mark.slow
def test_an_autotuned_kernel_line_reaches_its_copy_and_the_chosen_config(user_triton_store):
    root, runs = user_triton_store
    load = _user_line("x = tl.load(x_ptr + offsets, mask=mask)", after="def silu_forward_kernel(")
    source_text = (EXAMPLES / "user_triton_kernel.py").read_text().splitlines()[load - 1].strip()
    with Store(root) as store:
        answer = store.run(runs["train"]).query(EXAMPLE, load)
        [copy] = answer.user_kernels
        assert copy.kernel.function == "silu_forward_kernel" and copy.kernel.graph.kind == "forward"
        [row] = copy.lines
        assert row.text.strip() == source_text and row.reason == "copied from"
        copied = (root / copy.kernel.file).read_text().splitlines()
        assert copied[row.line - 1].strip() == source_text  # the stored copy has the user's text at that line
        # the config: both configs kept, the first launched (virtual-cuda: untimed), said so
        assert copy.kernel.configs[0] == FIRST_CONFIG and len(copy.kernel.configs) == 2
        assert copy.kernel.chosen == FIRST_CONFIG and "first config" in copy.kernel.chosen_by
        data = answer.to_dict()
        assert data["user_kernels"][0]["kernel"]["chosen"] == FIRST_CONFIG
        assert "launched with: BLOCK=256, num_warps=4, num_stages=3" in str(answer)

        # up: the copy's line -> the user's line, with the config in the JSON answer
        up = store.run(runs["train"]).query(copy.kernel.file, row.line)
        [back] = up.user_kernels
        assert [(line.source_file, line.source_line) for line in back.lines] == [(EXAMPLE, load)]
        assert up.to_dict()["user_kernels"][0]["kernel"]["configs"][1]["BLOCK"] == 128
        # the helper the kernel calls is copied after it (and after the backward kernel), each line linked
        helper = _user_line("return 1.0 / (1.0 + tl.exp(-x))", after="def _sigmoid(")
        helper_copies = {copy.kernel.function: copy for copy in store.run(runs["train"]).query(EXAMPLE, helper)
                         .user_kernels}
        assert sorted(helper_copies) == ["silu_backward_kernel", "silu_forward_kernel"]
        assert helper_copies["silu_forward_kernel"].lines[0].line > row.line


@pytest.mark.slow
def test_a_triton_op_kernel_has_a_copy_in_each_graph_and_its_launch_reaches_the_call(user_triton_store):
    root, runs = user_triton_store
    store_line = _user_line("tl.store(out_ptr + offsets, a * x + b * y, mask=mask)", after="def axpby_kernel(")
    with Store(root) as store:
        run = store.run(runs["train"])
        copies = run.query(EXAMPLE, store_line).user_kernels
        assert {copy.kernel.graph.kind for copy in copies} == {"forward", "backward"}
        for copy in copies:
            assert copy.kernel.chosen == {"BLOCK": 512} and "no autotune" in copy.kernel.chosen_by
            assert copy.kernel.configs == [] and copy.kernel.launch_lines
            # the launch line in the wrapper -> the post-grad HOP node -> the program's call line
            wrapper = next(graph.files["wrapper"] for graph in run.details.graphs
                           if graph.key == copy.kernel.graph.key)
            launch = run.query(wrapper, copy.kernel.launch_lines[0], direction="up").result
            [chain] = launch.graphs
            assert {node.target for node in chain.post_nodes} == {
                "torch.ops.higher_order.triton_kernel_wrapper_mutation"}
            calls = {source.code.strip() for source in chain.sources}
            assert any(code.startswith("return axpby(") or "axpby(grad" in code for code in calls), calls
        # the autotuned kernel's launch reaches `silu_forward_kernel[grid](...)`
        [silu] = run.query(EXAMPLE, _user_line("mask = offsets < n", after="def silu_forward_kernel(")).user_kernels
        wrapper = next(graph.files["wrapper"] for graph in run.details.graphs if graph.key == silu.kernel.graph.key)
        launch = run.query(wrapper, silu.kernel.launch_lines[0], direction="up").result
        assert any(source.code.strip().startswith("silu_forward_kernel[") for chain in launch.graphs
                   for source in chain.sources)
        # heuristics: the constexpr it computed is what the copy was specialized with
        [backward] = run.query(EXAMPLE, _user_line("s = _sigmoid(x)", after="def silu_backward_kernel(")).user_kernels
        assert backward.kernel.heuristics == ["BLOCK"] and backward.kernel.chosen == {"BLOCK": 1024}


@pytest.mark.slow
def test_show_lists_the_user_kernels_with_their_configs(user_triton_store):
    root, runs = user_triton_store
    with Store(root) as store:
        report = store.run(runs["inference"]).report()
        data = store.run(runs["inference"]).to_dict()
        dumped = store.run(runs["train"]).dump()
    validate_dump(dumped)  # the dump carries each user kernel (`kernel.user`), schema-valid
    users = {(graph["kind"], kernel["name"]): kernel["user"] for graph in dumped["run"]["graphs"]
             for kernel in graph["kernels"] if kernel["user"] is not None}
    assert users[("forward", "silu_forward_kernel")]["chosen"] == FIRST_CONFIG
    assert {line["source"]["function"] for line in users[("forward", "silu_forward_kernel")]["lines"]} == {
        "silu_forward_kernel", "_sigmoid"}
    assert users[("forward", "silu_forward_kernel")]["source"]["file"] == EXAMPLE
    assert "user Triton kernels (kernel lines linked to the user's kernel source: 100.0%" in report
    assert "* BLOCK=256, num_warps=4, num_stages=3" in report and "launched with: BLOCK=512" in report
    assert data["user_kernels"]["lines_linked"]["covered"] == data["user_kernels"]["lines_linked"]["total"] > 0


def test_on_a_gpu_the_config_is_the_one_user_autotune_kept():
    """--target cuda: a user kernel's launched config is its `launch` (what Inductor's
    user_autotune kept at the first launch, asm_launches), timed when there were several."""
    configs = [{"BLOCK": 256, "num_warps": 4, "num_stages": 3}, {"BLOCK": 128, "num_warps": 2, "num_stages": 3}]
    timed = Kernel("silu", "triton", "", [], user=UserKernel("silu", SourceLocation("m.py", 3), configs=configs),
                   launch={"config": configs[1], "candidates": configs})
    single = Kernel("axpby", "triton", "", [], user=UserKernel("axpby", SourceLocation("m.py", 9)),
                    launch={"config": {"BLOCK": 512, "num_warps": 4, "num_stages": 3}, "candidates": []})
    untouched = Kernel("other", "triton", "", [], user=UserKernel("other", SourceLocation("m.py", 20),
                                                                   chosen={"BLOCK": 64}, chosen_by="the only config"))
    graph = GraphRecord(0, 0, 0, "forward", kernels=[timed, single, untouched])
    add_gpu_choices([graph])
    assert timed.user.chosen == configs[1] and timed.user.chosen_by.startswith("timed on the GPU")
    assert single.user.chosen == {"BLOCK": 512, "num_warps": 4, "num_stages": 3}
    assert single.user.chosen_by == "the only config"
    assert untouched.user.chosen == {"BLOCK": 64}  # no launch recorded: as the run found it
