"""The model suite: record every model of bench/suite/ and print one table.

    python bench/suite.py                          # every model, inference and training, on virtual-cuda
    python bench/suite.py --jobs 2 --json bench/results/suite_virtual_cuda_torch2.13.json
    python bench/suite.py --family decoder --mode train
    python bench/suite.py --only llama bert --target cuda          # on a GPU
    python bench/suite.py --target cpu             # C++ kernels: one model per family (registry.CPU_MODELS)
    python bench/suite.py --compare --jobs 12 --json OUT.json      # on a GPU: cuda against virtual-cuda
    python bench/suite.py --compare --replay --jobs 12 --json OUT.json   # ... replaying the GPU's decisions
    python bench/suite.py --compare --replay --rows unet:inference swin:train  # these rows only

The models are the architectures PyTorch's own compile benchmarks track (benchmarks/dynamo/ in
pytorch/pytorch), built from their libraries' configs with the defaults as shipped, shrunk only in
size (bench/suite/registry.py lists them). Each model and mode is recorded in a fresh process,
`python -m kernelscope compile bench/suite/<module>.py:<factory> [--train] --json --store TMP`, with
a timeout; `--jobs` of them at once, each started only while the machine has `--job-memory` GiB
free. The table gives, per row: recorded (or the one-line error), kernel body lines and wrapper
lines attributed to post-grad nodes, Triton kernels whose node set equals Inductor's own mapping,
post-grad nodes traced to a source line (forward, backward), kernels, and wall time. The exit
status is 1 when a row was not recorded or missed a floor (FLOORS), else 0.

`--target cpu` records Inductor's C++ kernels for the CPU, each compiled with the system's C++
compiler: it runs the smallest model of each family (registry.CPU_MODELS) unless `--only` names
models, and holds them to issue 36's floors (CPU_FLOORS): every C++ kernel's node set equal to
Inductor's own mapping and every post-grad node traced to a source line.

`--compare` (a GPU machine) records each row twice under the same torch, `--target cuda` and
`--target virtual-cuda`, with bench/gpu_check.py's recorder, and gives gpu_check's verdict:
identical, a difference that a timing decision of the GPU explains (named), or DIFFERENT.
With `--replay`, each row's cuda recording also writes the timing decisions the GPU made
(docs/decisions.md), and the virtual-cuda recording replays them (`--decisions`): the two run
one after the other, and no timing difference is expected.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from suite.registry import CPU_MODELS, FAMILIES, MODELS, SuiteModel  # noqa: E402

MODES = ("inference", "train")
# Every row must reach these shares (issue 19: 100% recorded, every floor >= 95%).
FLOORS = {"kernel_lines": 0.95, "wrapper_lines": 0.95, "kernel_agreement": 0.95,
          "forward_nodes_with_source": 0.95, "backward_nodes_with_source": 0.95}
# --target cpu (issue 36): kernel and wrapper lines >= 95%, agreement and node-to-source 100%.
CPU_FLOORS = dict(FLOORS, kernel_agreement=1.0, forward_nodes_with_source=1.0, backward_nodes_with_source=1.0)
COLUMNS = [("kernel_lines", "kernel ln"), ("wrapper_lines", "wrapper ln"), ("kernel_agreement", "agree"),
           ("forward_nodes_with_source", "fw nodes"), ("backward_nodes_with_source", "bw nodes")]


# -- running ------------------------------------------------------------------------------


def available_memory_mb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("inf")


class MemoryGate:
    """Starts a job only while `need_mb` of memory is free, or when no other job runs."""

    def __init__(self, need_mb: float):
        self.need_mb = need_mb
        self.running = 0
        self.changed = threading.Condition()

    def __enter__(self):
        with self.changed:
            while self.running and available_memory_mb() < self.need_mb:
                self.changed.wait(timeout=2)
            self.running += 1

    def __exit__(self, *exc):
        with self.changed:
            self.running -= 1
            self.changed.notify_all()


def child_env() -> dict:
    """The recording's environment: this checkout's kernelscope first, compiles in-process, no hub."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, TORCHINDUCTOR_COMPILE_THREADS="1", HF_HUB_OFFLINE="1")


def one_line_error(stderr: str, returncode: int) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("kernelscope: error:"):
            # library files are named from their package: transformers/cache_utils.py:125
            text = line.removeprefix("kernelscope: error:").strip().replace(f"{REPO}{os.sep}", "")
            return re.sub(r"\S*/site-packages/", "", text)
    if returncode < 0:
        return f"killed by signal {-returncode} (out of memory?)"
    return lines[-1] if lines else f"exit status {returncode}"


def record(model: SuiteModel, train: bool, target: str, timeout: int) -> dict:
    """One `kernelscope compile` of the model in a fresh process: a table row."""
    row = {"model": model.name, "family": model.family, "library": model.library,
           "mode": "train" if train else "inference", "spec": model.shown_spec(train), "target": target}
    with tempfile.TemporaryDirectory(prefix=f"suite-{model.name}-") as store:
        argv = [sys.executable, "-m", "kernelscope", "compile", model.spec(train), "--target", target,
                "--json", "--store", store] + (["--train"] if train else [])
        started = time.perf_counter()
        try:
            done = subprocess.run(argv, cwd=REPO, env=child_env(), capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return dict(row, recorded=False, error=f"timed out after {timeout} s", wall=timeout)
        row["wall"] = round(time.perf_counter() - started, 1)
    if done.returncode != 0:
        return dict(row, recorded=False, error=one_line_error(done.stderr, done.returncode))
    summary = json.loads(done.stdout)
    return dict(row, recorded=True, torch=summary["torch"], provenance=summary["provenance"],
                coverage=summary["coverage"], graphs=len(summary["graphs"]),
                kernels=sum(g["kernels"] for g in summary["graphs"]),
                extern_calls=sum(g["extern_calls"] for g in summary["graphs"]),
                graph_breaks=len(summary["graph_breaks"]), warnings=summary["warnings"],
                timings=summary["timings"], peak_memory_mb=summary["peak_memory_mb"])


def compare(model: SuiteModel, train: bool, real: dict, virtual: dict, replayed: bool = False) -> dict:
    """`--compare`: gpu_check's verdict on one row recorded for the GPU and on virtual-cuda
    (`replayed`: virtual-cuda replayed the GPU's timing decisions)."""
    import gpu_check

    row = {"model": model.name, "family": model.family, "library": model.library,
           "mode": "train" if train else "inference", "spec": model.shown_spec(train),
           "wall": round(real.pop("wall", 0) + virtual.pop("wall", 0), 1)}
    verdict = gpu_check.compare(real, virtual, replayed=replayed)
    if replayed and "error" not in verdict:
        verdict["decisions"] = gpu_check.decisions_report(real, virtual)
    return {**verdict, **row}  # "mode": inference or train (not the compile mode)


def record_for_compare(model: SuiteModel, train: bool, device: str, timeout: int,
                       decisions_in: Path | None = None, decisions_out: Path | None = None) -> dict:
    """gpu_check's recording (every kernel's source and nodes) of one row on one device;
    `decisions_out`: write the run's timing decisions there; `decisions_in`: replay them."""
    import gpu_check

    started = time.perf_counter()
    result = gpu_check.record_spec(model.spec(train), device, train, timeout=timeout,
                                   decisions_in=decisions_in, decisions_out=decisions_out)
    return dict(result, wall=round(time.perf_counter() - started, 1))


def record_replayed_pair(model: SuiteModel, train: bool, timeout: int,
                         real_target: str = "cuda") -> tuple[dict, dict]:
    """`--compare --replay`: the row on the GPU (writing its timing decisions), then on
    virtual-cuda replaying them. (`real_target`: what stands for the GPU; tests use virtual-cuda.)"""
    with tempfile.TemporaryDirectory(prefix=f"suite-decisions-{model.name}-") as folder:
        decisions = Path(folder) / "decisions.json"
        real = record_for_compare(model, train, real_target, timeout, decisions_out=decisions)
        if "error" in real or not decisions.is_file():
            return real, {"error": f"no {real_target} recording to replay", "wall": 0}
        return real, record_for_compare(model, train, "virtual-cuda", timeout, decisions_in=decisions)


@functools.lru_cache(maxsize=1)
def committed_walls() -> dict[tuple[str, str], float]:
    """{(model, mode): wall seconds} from the committed virtual-cuda results, if any."""
    for path in sorted((BENCH / "results").glob("suite_virtual_cuda_*.json")):
        try:
            return {(r["model"], r["mode"]): r.get("wall", 0) for r in json.loads(path.read_text())["rows"]}
        except (OSError, ValueError, KeyError):
            continue
    return {}


def expected_seconds(model: SuiteModel, train: bool) -> float:
    """A row's wall time in the committed results (0 if none): the longest rows start first."""
    return committed_walls().get((model.name, "train" if train else "inference"), 0)


def floors(target: str | None) -> dict[str, float]:
    return CPU_FLOORS if target == "cpu" else FLOORS


def missed_floors(row: dict) -> list[str]:
    if not row.get("recorded"):
        return ["recorded"]
    missed = []
    for key, floor in floors(row.get("target")).items():
        share = (row["coverage"].get(key) or {}).get("share")
        if share is not None and share < floor:
            missed.append(key)
    if row.get("provenance") != "line":
        missed.append("provenance")
    return missed


def selected(args) -> list[tuple[SuiteModel, bool]]:
    # --target cpu: one model per family unless --only names others
    wanted = args.only or (CPU_MODELS.values() if args.target == "cpu" and not args.compare else None)
    models = [m for m in MODELS if (not wanted or m.name in wanted)
              and (not args.family or m.family in args.family)]
    unknown = set(args.only or ()) - {m.name for m in MODELS}
    if unknown:
        raise SystemExit(f"suite.py: no model named {', '.join(sorted(unknown))} "
                         f"(bench/suite/registry.py lists {len(MODELS)})")
    k, n = args.shard
    rows = [(m, mode == "train") for m in models[k - 1::n] for mode in MODES if mode in args.mode]
    if args.rows:  # MODEL:MODE pairs, in the registry's order
        wanted = set(args.rows)
        rows = [(m, train) for m, train in rows if (m.name, "train" if train else "inference") in wanted]
        unknown = wanted - {(m.name, "train" if train else "inference") for m, train in rows}
        if unknown:
            raise SystemExit(f"suite.py: --rows {' '.join(f'{m}:{mode}' for m, mode in sorted(unknown))} "
                             "not among the selected rows")
    return rows


# -- printing -------------------------------------------------------------------------------


def share_text(ratio: dict | None, floor: float) -> str:
    if not ratio or ratio.get("share") is None:
        return "-"
    mark = "" if ratio["share"] >= floor else " !"
    return f"{ratio['share'] * 100:.1f}%{mark}"


def totals(rows: list[dict]) -> dict:
    recorded = [r for r in rows if r.get("recorded")]
    summed = {}
    for key, _ in COLUMNS:
        covered = sum((r["coverage"].get(key) or {}).get("covered", 0) for r in recorded)
        total = sum((r["coverage"].get(key) or {}).get("total", 0) for r in recorded)
        summed[key] = {"covered": covered, "total": total, "share": round(covered / total, 4) if total else None}
    return {"rows": len(rows), "recorded": len(recorded), "models": len({r["model"] for r in rows}),
            "rows_meeting_floors": sum(1 for r in rows if not missed_floors(r)),
            "kernels": sum(r["kernels"] for r in recorded), "graphs": sum(r["graphs"] for r in recorded),
            "graph_breaks": sum(r["graph_breaks"] for r in recorded), "coverage": summed,
            "wall": round(sum(r.get("wall", 0) for r in rows), 1)}


def print_table(rows: list[dict], target: str, elapsed: float) -> None:
    torch_version = next((r["torch"] for r in rows if r.get("torch")), "?")
    floor = floors(target)
    print(f"\nmodel suite on {target}, torch {torch_version} (! marks a share under its floor; "
          f"floors: {', '.join(f'{k} {v:.0%}' for k, v in floor.items())})")
    header = f"{'model':17} {'family':18} {'mode':9} {'recorded':8} " + " ".join(
        f"{title:>10}" for _, title in COLUMNS) + f" {'kernels':>7} {'graphs':>6} {'breaks':>6} {'time':>6}"
    print(header)
    for row in rows:
        start = f"{row['model']:17} {row['family']:18} {row['mode']:9} "
        if not row.get("recorded"):
            print(start + f"{'NO':8} {row['error'][:160]}")
            continue
        shares = " ".join(f"{share_text(row['coverage'].get(key), floor[key]):>10}" for key, _ in COLUMNS)
        print(start + f"{'yes':8} {shares} {row['kernels']:7} {row['graphs']:6} {row['graph_breaks']:6} "
                      f"{row['wall']:5.0f}s")
    summary = totals(rows)
    shares = " ".join(f"{share_text(summary['coverage'][key], floor[key]):>10}" for key, _ in COLUMNS)
    print(f"{'total':17} {str(summary['models']) + ' models':18} {str(summary['rows']) + ' rows':9} "
          f"{summary['recorded']:>3}/{summary['rows']:<4} {shares} {summary['kernels']:7} {summary['graphs']:6} "
          f"{summary['graph_breaks']:6} {summary['wall']:5.0f}s")
    print(f"recorded {summary['recorded']}/{summary['rows']}; rows meeting every floor "
          f"{summary['rows_meeting_floors']}/{summary['rows']}; {elapsed:.0f} s wall in all", flush=True)


def print_markdown(rows: list[dict], target: str) -> None:
    """The table as Markdown, for docs/model-suite.md, docs/targets.md (cpu) and the README."""
    floor = floors(target)
    titles = ["model", "family", "mode", "recorded"] + [t for _, t in COLUMNS] + ["kernels", "graphs", "breaks",
                                                                                 "time"]
    print("| " + " | ".join(titles) + " |")
    print("|" + "---|" * len(titles))
    for row in rows:
        start = [row["model"], row["family"], row["mode"]]
        if not row.get("recorded"):
            error = row["error"].replace("|", "\\|")
            print("| " + " | ".join(start + [f"no: {error}"] + [""] * (len(titles) - 4)) + " |")
            continue
        shares = [share_text(row["coverage"].get(key), floor[key]) for key, _ in COLUMNS]
        print("| " + " | ".join(start + ["yes"] + shares + [str(row["kernels"]), str(row["graphs"]),
                                                           str(row["graph_breaks"]), f"{row['wall']:.0f} s"]) + " |")
    summary = totals(rows)
    shares = [share_text(summary["coverage"][key], floor[key]) for key, _ in COLUMNS]
    print("| " + " | ".join([f"**all {summary['models']} models**", "", f"{summary['rows']} rows",
                             f"{summary['recorded']}/{summary['rows']}"] + shares
                            + [str(summary["kernels"]), str(summary["graphs"]), str(summary["graph_breaks"]),
                               f"{summary['wall']:.0f} s"]) + " |")


def print_comparison(rows: list[dict], elapsed: float) -> None:
    torch_version = next((r["torch"] for r in rows if r.get("torch")), "?")
    print(f"\nmodel suite, --target cuda against --target virtual-cuda, torch {torch_version}")
    print(f"{'model':17} {'family':18} {'mode':9} {'real':>5} {'virt':>5} {'names':>6} {'fusion':>7} "
          f"{'source':>7}  verdict")
    for row in rows:
        start = f"{row['model']:17} {row['family']:18} {row['mode']:9} "
        if "error" in row:
            print(start + f"error ({row['error_in']}): {row['error'].strip().splitlines()[-1][:200]}")
            continue
        guessed = len(row["decisions"]["guessed"]) if "decisions" in row else None
        print(start + f"{row['kernels_real']:5} {row['kernels_virtual']:5} {str(row['same_names']):>6} "
              f"{row['same_fusion']:7} {row['same_source']:7}  {row['verdict']}"
              + (f" (replayed; {guessed} decisions guessed)" if guessed is not None else ""))
    verdicts: dict[str, int] = {}
    for row in rows:
        verdict = row.get("verdict") or f"error ({row.get('error_in')})"
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    print("verdicts: " + "; ".join(f"{v} {n}" for v, n in sorted(verdicts.items(), key=lambda x: -x[1]))
          + f"; {elapsed:.0f} s wall in all")


# -- main -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:10]))
    parser.add_argument("--target", default="virtual-cuda", choices=["virtual-cuda", "cuda", "cpu-triton", "cpu"])
    parser.add_argument("--compare", action="store_true",
                        help="on a GPU: record each row for cuda and virtual-cuda and compare the kernels")
    parser.add_argument("--replay", action="store_true",
                        help="with --compare: virtual-cuda replays the timing decisions of the row's cuda recording")
    parser.add_argument("--only", nargs="*", metavar="MODEL", help="these models only")
    parser.add_argument("--family", nargs="*", choices=FAMILIES, help="these families only")
    parser.add_argument("--mode", nargs="*", choices=MODES, default=list(MODES))
    parser.add_argument("--rows", nargs="*", type=row_spec, metavar="MODEL:MODE",
                        help="these rows only, e.g. unet:inference swin:train")
    parser.add_argument("--jobs", type=int, default=1, help="recordings at once (default: 1)")
    parser.add_argument("--job-memory", type=float, default=3.0, metavar="GIB",
                        help="start a recording only while this much memory is free (default: 3)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per recording (default: 600)")
    parser.add_argument("--json", type=Path, metavar="OUT",
                        help="write every row and the totals to OUT (rewritten as recordings finish)")
    parser.add_argument("--shard", metavar="K/N", type=shard, default=(1, 1),
                        help="only every N-th model from the K-th (to split a run across calls)")
    parser.add_argument("--resume", type=Path, metavar="JSON",
                        help="take the rows already in JSON (a --json file, finished or cut short) "
                             "and record only the others")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--table-only", action="store_true",
                        help="record nothing: print the table of the rows --resume holds")
    return parser


def main() -> int:
    parser = build_parser()
    args = parser.parse_args()
    if args.replay and not args.compare:
        parser.error("--replay compares against the GPU: use it with --compare")

    todo = selected(args)
    rows_done = resumed_rows(args.resume, todo) if args.resume else {}
    # --compare --replay: one job per row (the GPU, then virtual-cuda with its decisions)
    devices = ("cuda+replay",) if args.replay else ("cuda", "virtual-cuda") if args.compare else (args.target,)
    jobs = sorted(((model, train, device) for model, train in todo if (model.name, train) not in rows_done
                   for device in devices), key=lambda job: -expected_seconds(job[0], job[1]))
    if args.table_only:  # print what --resume holds; a row it lacks is shown as not run
        for model, train, _ in jobs:
            rows_done[(model.name, train)] = {"model": model.name, "family": model.family, "library": model.library,
                                              "mode": "train" if train else "inference", "recorded": False,
                                              "error": "not run", "error_in": "both", "wall": 0}
        jobs = []
    gate = MemoryGate(args.job_memory * 1024)
    pending: dict[tuple, dict] = {}  # --compare: one side recorded, the other not yet
    lock = threading.Lock()
    count = iter(range(1, len(jobs) + 1))

    def run(job):
        model, train, device = job
        with gate:
            if device == "cuda+replay":
                real, result = record_replayed_pair(model, train, args.timeout)
            elif args.compare:
                result = record_for_compare(model, train, device, args.timeout)
            else:
                result = record(model, train, device, args.timeout)
        wall = result.get("wall", 0)  # compare() takes it over into the row
        with lock:
            if device == "cuda+replay":
                wall += real.get("wall", 0)
                rows_done[(model.name, train)] = compare(model, train, real, result, replayed=True)
                result = rows_done[(model.name, train)]
            elif not args.compare:
                rows_done[(model.name, train)] = result
            elif (model, train) in pending:  # both sides recorded: keep the verdict, drop the sources
                other = pending.pop((model, train))
                real, virtual = (result, other) if device == "cuda" else (other, result)
                rows_done[(model.name, train)] = compare(model, train, real, virtual)
            else:
                pending[(model, train)] = result
            if args.json:  # what is finished survives a run cut short (and --resume takes it up)
                write_json(args.json, {"partial": True, "rows": list(rows_done.values())})
            number = next(count)
        state = ("recorded" if result.get("recorded") or (args.compare and "error" not in result)
                 else f"FAILED: {(result.get('error') or '').strip()[:200]}")
        print(f"[{number}/{len(jobs)}] {model.name} {'train' if train else 'inference'} {device}: {state} "
              f"({wall:.0f} s)", file=sys.stderr, flush=True)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(run, jobs))
    rows = [rows_done[(model.name, train)] for model, train in todo]
    elapsed = time.perf_counter() - started
    if args.compare:
        print_comparison(rows, elapsed)
        failed = [r for r in rows if "error" in r or r["verdict"] == "DIFFERENT"]
    elif args.markdown:
        print_markdown(rows, args.target)
        failed = [r for r in rows if missed_floors(r)]
    else:
        print_table(rows, args.target, elapsed)
        failed = [r for r in rows if missed_floors(r)]
    if args.json:
        report = {"target": ("cuda vs virtual-cuda replaying its decisions" if args.replay else
                             "cuda vs virtual-cuda" if args.compare else args.target),
                  "floors": floors(args.target), "elapsed": round(elapsed, 1), "rows": rows}
        if not args.compare:
            report["totals"] = totals(rows)
        write_json(args.json, report)
    return 1 if failed else 0


def resumed_rows(path: Path, todo: list[tuple[SuiteModel, bool]]) -> dict[tuple[str, bool], dict]:
    """{(model, train): row} for the selected rows that `path` (a --json report) already holds."""
    wanted = {(model.name, train) for model, train in todo}
    rows = json.loads(path.read_text())["rows"]
    return {(r["model"], r["mode"] == "train"): r for r in rows if (r["model"], r["mode"] == "train") in wanted}


def write_json(path: Path, report: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")


def row_spec(text: str) -> tuple[str, str]:
    model, _, mode = text.partition(":")
    if mode not in MODES:
        raise argparse.ArgumentTypeError(f"'{text}' is not MODEL:MODE with MODE one of {', '.join(MODES)}")
    return model, mode


def shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not K/N, e.g. 1/2") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"'{text}': K must be between 1 and N")
    return k, n


if __name__ == "__main__":
    raise SystemExit(main())
