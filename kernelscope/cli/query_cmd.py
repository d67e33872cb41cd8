"""`kernelscope query FILE:LINE`: the provenance chain through one line, as a tree.

A source line's answer leads with a summary per graph and module instance (the
line `x = block(x)` of a 12-layer model reaches thousands of generated lines),
read from the counts the store keeps per line (RunView.line_overview: one index
probe however deep the model), with instances of the same shape folded into one
group (`blocks.2–46 (45 × Block)`); `--module` opens one instance and `--detail`
prints every node, kernel line and wrapper line. Answers from a generated line
are small and always detailed, with each node's whole call stack.

The answer is the Python API's (`kernelscope.api.answer.ask`, behind `Run.query`), and
its tree is kernelscope.render.query_tree's: this module only prints them."""
from __future__ import annotations

import argparse
import sys

from kernelscope.api.answer import ask
from kernelscope.api.store import Store
from kernelscope.cli.common import new_parser, parse_file_line, parse_run_id, print_json, print_tree
from kernelscope.store import DEFAULT_STORE_DIR


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "query",
        help="show what a line became (down) or came from (up)",
        description="Follow the provenance chain through FILE:LINE. FILE is a model source file, or a "
        f"generated file of a run ({DEFAULT_STORE_DIR}/runs/<id>/...: a kernel, wrapper.py, "
        "pre_grad.py or post_grad.py). Down from a source line: its pre- and post-grad nodes, the kernel "
        "lines and wrapper lines they became. Up from a generated line: its post-grad nodes, their "
        "pre-grad nodes and the source lines. Every hop says why.",
        examples=[
            "kernelscope query examples/mlp.py:13",
            "kernelscope query examples/mlp.py:13 --direction down --run 3",
            f"kernelscope query {DEFAULT_STORE_DIR}/runs/3/graphs/0_0_0-forward/kernels/triton_poi_fused_gelu_0.py:12",
            "kernelscope query examples/nanogpt.py:69                  # x = block(x): every layer, alike ones folded",
            "kernelscope query examples/nanogpt.py:69 --module blocks.1          # one layer, by submodule",
            "kernelscope query examples/nanogpt.py:69 --module blocks.1 --detail",
            "kernelscope query examples/mlp.py:13 --json",
            "kernelscope query bench/models/gpt2.py:40 --asm        # down to PTX and SASS (sm_90), registers, spills",
        ],
    )
    parser.add_argument("location", metavar="FILE:LINE", help="the line to start from")
    parser.add_argument("--run", dest="run_id", type=parse_run_id, metavar="ID",
                        help="run id (default: the latest run that has FILE)")
    parser.add_argument("--direction", choices=["up", "down", "both"], default="both",
                        help="which way to follow the chain (default: both)")
    parser.add_argument("--module", metavar="PATH",
                        help="keep only this module instance and those inside it (dotted prefix, e.g. blocks.1)")
    parser.add_argument("--direct-only", action="store_true",
                        help="only nodes whose own line this is, not those it calls into")
    parser.add_argument("--detail", action="store_true",
                        help="every node, kernel line and wrapper line (default for a source line: a summary "
                        "per graph and module instance, instances of the same shape folded into one group)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON (always complete: every node and line, each graph's "
                        "module instances and their folded groups with the members of each)")
    parser.add_argument("--asm", action="store_true",
                        help="below the kernel: each Triton kernel's PTX and SASS lines for this line, with its "
                        "registers, spills and occupancy (compiled on first ask); a .ptx/.sass FILE goes up")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernelscope.cli import asm_query

    if asm_query.wanted(args):
        return asm_query.run(args)
    path, line = parse_file_line(args.location)
    with Store(args.store) as store:
        answer = ask(store.backend, path, line, args.run_id, args.direction, args.module, args.direct_only,
                     detail=args.detail or args.json,
                     on_warning=lambda problem: print(f"kernelscope: warning: {problem}", file=sys.stderr))
    if args.json:
        print_json(answer.to_dict())
        return 0
    print_tree(answer.tree())
    return 0
