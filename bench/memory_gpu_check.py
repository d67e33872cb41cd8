"""Predicted against measured peak memory on a GPU (docs/memory.md), one command:

    python bench/memory_gpu_check.py [--cases mlp,gpt2] [--modes inference,train] [--out results.json]

For every bundled example and zoo model (bench/models/), inference and training, it records
the model with `--target cuda --memory` (the recording's own call compiles it and pays
what a first call allocates once, cuBLAS's workspace; then the compiled step runs again
under the CUDA caching allocator's history: engine/memory_measure.py) and compares:
- predicted: the step's peak the wrapper timelines give, above what the caller held before
  it (store/parts/memory_step.py: forwards, then the backwards in reverse; a backward's
  saved activations and tangent freed at their `del`, the forward's unsaved outputs
  dropped with the loss). `rounded`: the same with every allocation rounded up to the
  allocator's 512-byte blocks;
- measured: torch.cuda.max_memory_allocated() during the step, above memory_allocated()
  before it;
- the snapshot join (profile/memory_join.py): the allocations whose frames name a wrapper
  file the recording computed (Inductor's cache path, the hash of the wrapper text), at
  which wrapper lines, how many of those lines the timeline predicts an allocation at, and
  how many have the predicted size (rounded to blocks).
Printed per case, with the error of predicted against measured; `--out` writes the rows as
JSON. The target (issue 34): within 10% on the zoo, inference and training.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernelscope.store.parts import memory_step  # noqa: E402 - after the checkout is on the path

EXAMPLES = ["mlp", "attention", "conv_bn", "nanogpt"]
ZOO = ["gpt2", "bert", "llama", "small_cnn", "transformer_encoder", "moe", "nanogpt_deep"]
BLOCK = 512  # the caching allocator rounds every allocation up to this


FACTORY = {"nanogpt_deep": "make_deep"}  # the zoo file's factory where it is not `make`


def spec_of(case: str) -> str:
    folder = "examples" if case in EXAMPLES else "bench/models"
    return f"{REPO / folder / case}.py:{FACTORY.get(case, 'make')}"


def rounded(count: int) -> int:
    return -(-count // BLOCK) * BLOCK


def predicted_extra(run, round_up: bool) -> int:
    graphs = [memory_step.from_buffers(graph.key, graph.kind, graph.compile_id,
                                       [(e.line, e.action, e.bytes) for e in graph.memory.timeline],
                                       graph.memory.buffers)
              for graph in run.graphs if graph.memory is not None and graph.subgraph is None]
    return memory_step.step_peak(graphs, rounded if round_up else int).bytes


def join_summary(run) -> dict:
    measured = run.measured_memory
    predicted = {(graph.key, event.line): event.bytes for graph in run.graphs if graph.memory is not None
                 for event in graph.memory.timeline if event.action == "allocate"}
    on_line = [line for line in measured.lines if (line.graph, line.line) in predicted]
    return {"allocations": measured.allocations, "allocations_in_wrappers": measured.joined,
            "joined_bytes": measured.joined_bytes, "wrapper_lines": len(measured.lines),
            "on_predicted_line": len(on_line),
            "same_size": sum(1 for line in on_line
                             if line.bytes == line.allocations * rounded(predicted[(line.graph, line.line)]))}


def check(case: str, train: bool) -> dict:
    import torch

    from kernelscope.engine import targets
    from kernelscope.engine.recorder import RecordOptions, record_model

    torch._dynamo.reset()
    target = targets.parse_factory_spec(spec_of(case))
    model, inputs = targets.load_factory(target, "cuda")
    options = RecordOptions(device="cuda", train=train, workspace=REPO, measure_memory=True)
    run = record_model(model, tuple(inputs), options, f"{case}:make")
    measured = run.measured_memory
    row = {"case": case, "mode": "train" if train else "inference", "before_bytes": measured.before_bytes,
           "measured_extra": measured.peak_bytes, "predicted_extra": predicted_extra(run, False),
           "predicted_extra_rounded": predicted_extra(run, True), "join": join_summary(run)}
    total_measured = row["before_bytes"] + row["measured_extra"]
    for key in ("predicted_extra", "predicted_extra_rounded"):
        total = row["before_bytes"] + row[key]
        row[key.replace("extra", "error")] = (total - total_measured) / total_measured if total_measured else None
        # the step's own bytes, the part the prediction is about (the whole includes the weights)
        row[key.replace("extra", "step_error")] = ((row[key] - row["measured_extra"]) / row["measured_extra"]
                                                   if row["measured_extra"] else None)
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
          f"{'err':>8}{'step err':>9}  snapshot join")
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
                  f"{row['predicted_error_rounded'] * 100:>7.1f}%"
                  f"{(row['predicted_step_error_rounded'] or 0) * 100:>8.1f}%  "
                  f"{join['allocations_in_wrappers']}/{join['allocations']} allocations on "
                  f"{join['wrapper_lines']} wrapper lines, {join['on_predicted_line']} predicted there, "
                  f"{join['same_size']} of the predicted size")
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                              "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
