"""Record a "cluster job" on a GPU the way a user profiles their own training or
inference: a plain `torch.compile` of an example, run under `torch.profiler`
(chrome trace) with `TORCH_TRACE` set for the same process. The committed traces
in this folder were made with it; the tests import the log and attach the trace.

    TORCH_TRACE=logs/mlp INDUCTOR_PROVENANCE=1 \
        python tests/data/profiles/record_job.py examples/mlp.py:make --steps 3 --trace mlp.json
    python tests/data/profiles/record_job.py examples/mlp.py:make --train --steps 3 --trace mlp_train.json

Inference: `with torch.no_grad(): out = compiled(x)`, then an eager `argmax` of the
output. Training: the compiled forward, an eager `sum` as the loss, the compiled
backward, then an eager SGD step and `zero_grad` — device time that belongs to no
compiled graph. Each step ends with a synchronize, inside its ProfilerStep range.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import torch


def load_factory(spec: str):
    path, _, factory = spec.rpartition(":")
    module_spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, factory)()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("target", metavar="PATH.py:FACTORY")
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--trace", required=True, help="where to write the chrome trace")
    args = parser.parse_args()

    model, inputs = load_factory(args.target)
    model = model.to("cuda").train(args.train)
    inputs = tuple(t.to("cuda") for t in inputs)
    compiled = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3) if args.train else None

    def step():
        if args.train:
            loss = compiled(*inputs).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        else:
            with torch.no_grad():
                compiled(*inputs).argmax(-1)
        torch.cuda.synchronize()

    step()  # compiles
    step()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=args.steps, repeat=1)
    with torch.profiler.profile(activities=activities, schedule=schedule,
                                on_trace_ready=lambda prof: prof.export_chrome_trace(args.trace)) as prof:
        for _ in range(1 + args.steps):
            step()
            prof.step()
    print(f"wrote {args.trace} ({args.steps} steps) on {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}, cwd {Path.cwd()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
