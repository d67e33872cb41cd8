"""The model suite as one compact Markdown table (a row per model), for the README.

    python bench/suite_table.py bench/results/suite_virtual_cuda_torch2.13.json [RERUN.json ...] \
        [--gpu COMPARE.json [COMPARE.json ...]]

Per model and mode: whether it recorded, the lowest of its coverage columns (kernel
lines, wrapper lines, agreement with Inductor's mapping, forward and backward nodes traced
to a source line: `bench/suite.py`'s floors), its Triton kernels and its time; with
`--gpu`, the verdict of `bench/suite.py --compare` on the GPU for that row (with several
files, a row of a later file replaces the same row of an earlier one: a rerun of some
models over a whole run; a row compared with `--replay`, virtual-cuda replaying the GPU's
timing decisions, is marked ³). The full
tables (every column) are in docs/model-suite.md.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

COVERAGE_KEYS = ("kernel_lines", "wrapper_lines", "kernel_agreement", "forward_nodes_with_source",
                 "backward_nodes_with_source")
SHORT_VERDICTS = {
    "identical": "identical",
    "same code (node names numbered differently)": "same code¹",
    "pad_mm timing choice differs (expected)": "pad_mm timing²",
}


def lowest_coverage(row: dict) -> str:
    shares = [row["coverage"][key]["share"] for key in COVERAGE_KEYS
              if row["coverage"].get(key) and row["coverage"][key].get("share") is not None]
    return f"{min(shares):.0%}" if shares else "-"


def cell(row: dict | None, verdict: str | None) -> list[str]:
    if row is None:
        return ["-", "", "", ""] + ([verdict or "-"] if verdict is not None else [])
    if not row.get("recorded"):
        return ["**no**", "", "", ""] + ([verdict or "-"] if verdict is not None else [])
    out = [lowest_coverage(row), str(row["kernels"]), f"{row['wall']:.0f} s"]
    return ["yes"] + out + ([verdict or "-"] if verdict is not None else [])


def short_verdict(row: dict) -> str:
    if not row.get("verdict"):
        return f"error ({row.get('error_in')})"
    return SHORT_VERDICTS.get(row["verdict"], row["verdict"]) + ("³" if row.get("replayed") else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", type=Path, nargs="+",
                        help="bench/suite.py --json output(s) of one target; "
                             "a later file's row replaces an earlier one's")
    parser.add_argument("--gpu", type=Path, nargs="*", help="bench/suite.py --compare --json output(s)")
    args = parser.parse_args()
    by_key = {(row["model"], row["mode"]): row for path in args.suite for row in json.loads(path.read_text())["rows"]}
    rows = list(by_key.values())
    verdicts = None
    if args.gpu:
        verdicts = {(row["model"], row["mode"]): short_verdict(row)
                    for path in args.gpu for row in json.loads(path.read_text())["rows"]}
    models = list(dict.fromkeys((row["model"], row["family"]) for row in rows))
    per_mode = ["recorded", "coverage", "kernels", "time"] + (["H100"] if verdicts is not None else [])
    titles = ["model", "family"] + [f"{mode} {title}" if index == 0 else title
                                    for mode in ("inference", "train") for index, title in enumerate(per_mode)]
    print("| " + " | ".join(titles) + " |")
    print("|" + "---|" * len(titles))
    for model, family in models:
        cells = [model, family]
        for mode in ("inference", "train"):
            verdict = None if verdicts is None else verdicts.get((model, mode), "")
            cells += cell(by_key.get((model, mode)), verdict)
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
