"""Predicted against measured peak memory on a GPU (docs/memory.md), one command:

    python bench/memory_gpu_check.py [--cases mlp,gpt2] [--modes inference,train] [--out results.json]

For every bundled example and zoo model (bench/models/), inference and training, it records
the model with `--target cuda` (kernelscope's memory: each graph's allocation timeline from
its wrapper, sized from Inductor's IR), then runs the same compiled step again under the CUDA
caching allocator's memory history and compares:
- predicted: the peak the wrapper timelines give for the step, over what was allocated
  before it (parameters, inputs, the cuBLAS workspace): inference, the graph's peak above its
  inputs; training, the larger of the forward's peak above its inputs and, in the backward,
  what the forward left alive (saved tensors and outputs) plus the backward's peak above its
  inputs plus its tangents. `rounded`: the same with every allocation rounded up to the
  allocator's 512-byte blocks;
- measured: torch.cuda.max_memory_allocated() during the step, above memory_allocated()
  before it;
- the snapshot join: each allocation the allocator's history records with a frame in a
  compiled wrapper (the executed file's text is the stored wrapper's), joined to the wrapper
  line kernelscope predicts an allocation at, and its size against the predicted bytes.
Printed per case, with the error of predicted against measured; `--out` writes the rows as
JSON. The target (issue 34): within 10% on the zoo, inference and training.
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

EXAMPLES = ["mlp", "attention", "conv_bn", "nanogpt"]
ZOO = ["gpt2", "bert", "llama", "small_cnn", "transformer_encoder", "moe", "nanogpt_deep"]
BLOCK = 512  # the caching allocator rounds every allocation up to this


def spec_of(case: str) -> str:
    folder = "examples" if case in EXAMPLES else "bench/models"
    return f"{REPO / folder / case}.py:make"


def rounded(count: int) -> int:
    return -(-count // BLOCK) * BLOCK


def graph_extra(graph, round_up: bool) -> int:
    """The most a graph's own buffers hold at once (above its inputs), from its timeline."""
    size = rounded if round_up else (lambda count: count)
    live = top = 0
    for event in graph.memory.timeline:
        if event.action == "allocate":
            live += size(event.bytes)
        elif event.action == "free":
            live -= size(-event.bytes)
        top = max(top, live)
    return top


def predicted_extra(run, round_up: bool) -> int:
    size = rounded if round_up else (lambda count: count)
    graphs = [graph for graph in run.graphs if graph.memory is not None]
    forwards = [graph for graph in graphs if graph.kind in ("forward", "inference")]
    top = max((graph_extra(graph, round_up) for graph in forwards), default=0)
    for backward in (graph for graph in graphs if graph.kind == "backward"):
        forward = next((g for g in graphs if g.kind == "forward" and g.compile_id == backward.compile_id), None)
        left = sum(size(b.bytes) for b in forward.memory.buffers
                   if b.kind == "buffer" and b.freed_line == 0) if forward is not None else 0
        tangents = sum(size(b.bytes) for b in backward.memory.buffers
                       if b.kind == "input" and b.name.startswith("tangents"))
        top = max(top, left + tangents + graph_extra(backward, round_up))
    return top


def measure(model, inputs, train: bool, run) -> dict:
    """The compiled step again (Dynamo's cache: the recorded code), under the allocator's history."""
    import torch

    from kernelscope.engine.user_model import scalar_loss

    compiled = torch.compile(model)

    def step() -> None:
        if train:
            scalar_loss(compiled(*inputs)).backward()
        else:
            with torch.no_grad():
                compiled(*inputs)

    # One step first, unmeasured: what the first call allocates once per process (cuBLAS's
    # workspace, a compile if the cache missed) is not the step's memory.
    step()
    if isinstance(model, torch.nn.Module):
        model.zero_grad(set_to_none=True)
    gc.collect()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=200000)
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    return {"before": before, "measured_extra": peak - before, "join": join_snapshot(snapshot, run)}


def join_snapshot(snapshot: dict, run) -> dict:
    """Allocations whose innermost frame in a compiled wrapper lands on a line kernelscope
    predicts an allocation at, and whose size is the predicted bytes (rounded to blocks)."""
    wrappers: dict[str, object] = {}  # executed file -> graph, by text
    texts = {graph.wrapper_text: graph for graph in run.graphs if graph.memory is not None}
    in_wrapper = on_line = same_size = 0
    for device_trace in snapshot.get("device_traces", []):
        for event in device_trace:
            if event.get("action") != "alloc":
                continue
            for frame in event.get("frames", []):
                name = frame.get("filename", "")
                if name not in wrappers:
                    try:
                        wrappers[name] = texts.get(Path(name).read_text()) if name.endswith(".py") else None
                    except OSError:
                        wrappers[name] = None
                graph = wrappers[name]
                if graph is None:
                    continue
                in_wrapper += 1
                predicted = {e.line: e.bytes for e in graph.memory.timeline if e.action == "allocate"}
                if frame.get("line") in predicted:
                    on_line += 1
                    same_size += int(rounded(predicted[frame["line"]]) == event.get("size"))
                break
    return {"allocations_in_wrappers": in_wrapper, "on_predicted_line": on_line, "same_size": same_size}


def check(case: str, train: bool) -> dict:
    import torch

    from kernelscope.engine import targets
    from kernelscope.engine.recorder import RecordOptions, record_model

    torch._dynamo.reset()
    target = targets.parse_factory_spec(spec_of(case))
    model, inputs = targets.load_factory(target, "cuda")
    options = RecordOptions(device="cuda", train=train, workspace=REPO)
    run = record_model(model, tuple(inputs), options, f"{case}:make")
    inputs = tuple(t.to("cuda") if isinstance(t, torch.Tensor) else t for t in inputs)
    if train and not isinstance(model, torch.nn.Module):
        inputs = tuple(t.detach().requires_grad_(True) if isinstance(t, torch.Tensor) and t.is_floating_point()
                       else t for t in inputs)
    measured = measure(model, inputs, train, run)
    row = {"case": case, "mode": "train" if train else "inference", "before_bytes": measured["before"],
           "measured_extra": measured["measured_extra"], "predicted_extra": predicted_extra(run, False),
           "predicted_extra_rounded": predicted_extra(run, True), "join": measured["join"]}
    total_measured = row["before_bytes"] + row["measured_extra"]
    for key in ("predicted_extra", "predicted_extra_rounded"):
        total = row["before_bytes"] + row[key]
        row[key.replace("extra", "error")] = (total - total_measured) / total_measured if total_measured else None
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(EXAMPLES + ZOO))
    parser.add_argument("--modes", default="inference,train")
    parser.add_argument("--out", help="write the rows as JSON")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: run this on a GPU machine", file=sys.stderr)
        return 2
    rows = []
    print(f"{torch.cuda.get_device_name()} · torch {torch.__version__}")
    print(f"{'case':<22}{'mode':<10}{'before MiB':>11}{'measured':>10}{'predicted':>10}{'rounded':>10}"
          f"{'err':>8}{'err rnd':>8}  snapshot join")
    for case in args.cases.split(","):
        for mode in args.modes.split(","):
            try:
                row = check(case, mode == "train")
            except Exception as error:  # noqa: BLE001 - one case failing does not stop the rest
                row = {"case": case, "mode": mode, "error": f"{type(error).__name__}: {error}"}
                print(f"{case:<22}{mode:<10} failed: {row['error']}")
                rows.append(row)
                continue
            rows.append(row)
            mib = 2 ** 20
            join = row["join"]
            print(f"{case:<22}{mode:<10}{row['before_bytes'] / mib:>11.1f}{row['measured_extra'] / mib:>10.2f}"
                  f"{row['predicted_extra'] / mib:>10.2f}{row['predicted_extra_rounded'] / mib:>10.2f}"
                  f"{row['predicted_error'] * 100:>7.1f}%{row['predicted_error_rounded'] * 100:>7.1f}%  "
                  f"{join['on_predicted_line']}/{join['allocations_in_wrappers']} on predicted lines, "
                  f"{join['same_size']} same size")
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                              "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
