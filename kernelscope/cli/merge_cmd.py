"""`kernelscope merge [STORE...]`: bring the stores a job's ranks wrote into one."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelscope.cli.common import format_table, new_parser, print_json
from kernelscope.cli.distributed_args import rank_stores
from kernelscope.errors import UserError
from kernelscope.store import DEFAULT_STORE_DIR, StoreBackend


def add_parser(subparsers) -> None:
    parser = new_parser(
        subparsers,
        "merge",
        help="merge per-rank stores (or any stores) into --store",
        description="Copy every run of each SOURCE store into --store, each keeping its rank and world size: "
        "under torchrun every rank records into STORE/rank-<R> (each writes locally, no SQLite over a shared "
        "filesystem), and this brings them together. Without SOURCE, the STORE/rank-* stores are merged. Runs "
        "already merged are skipped; the sources are left as they are.",
        examples=["kernelscope merge                       # .kernelscope/rank-* into .kernelscope",
                  "kernelscope merge node1/.kernelscope/rank-0 node2/.kernelscope/rank-1 --store job/.kernelscope",
                  "kernelscope merge --json"],
    )
    parser.add_argument("sources", nargs="*", metavar="SOURCE",
                        help=f"a store directory (default: every STORE/rank-<R>, e.g. {DEFAULT_STORE_DIR}/rank-1)")
    parser.add_argument("--json", action="store_true", help="print what was merged as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = Path(args.store)
    sources = [Path(source) for source in args.sources] or rank_stores(root)
    if not sources:
        raise UserError(f"nothing to merge: no per-rank stores ({root}/rank-<R>) and no SOURCE given — run the job "
                        f"under torchrun with `-m kernelscope run SCRIPT.py`, or name the stores to merge")
    results = []
    with StoreBackend(root, create=True) as store:
        for source in sources:
            results.append(store.merge_from(source))
        ranks = store.ranks_of_runs([new for result in results for _old, new in result.merged])
    if args.json:
        print_json([{"source": str(result.source),
                     "merged": [{"from": old, "run": new,
                                 "rank": ranks[new].rank if new in ranks else None} for old, new in result.merged],
                     "skipped": [{"from": old, "why": why} for old, why in result.skipped]} for result in results])
        return 0
    rows = []
    for result in results:
        rows += [[str(result.source), str(old), str(new), _rank(ranks.get(new))] for old, new in result.merged]
        rows += [[str(result.source), str(old), "-", f"skipped: {why}"] for old, why in result.skipped]
    print(format_table(["from store", "run there", "run here", "rank"], rows))
    merged = sum(len(result.merged) for result in results)
    sys.stdout.write(f"{merged} run(s) merged into {root}: kernelscope runs · kernelscope show RUN "
                     "(which ranks compiled identical code) · kernelscope diff rank0 rank1\n")
    return 0


def _rank(rank) -> str:
    return f"{rank.rank} of {rank.world_size}" if rank is not None else "(not a rank)"
