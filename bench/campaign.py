"""The reliability campaign (issue 20): faults, bad input, moved stores and concurrency,
with nothing lost. One command; it prints what was injected and what survived.

    python bench/campaign.py                 # the full campaign (about 15-25 minutes on 2 cores)
    python bench/campaign.py --quick         # a few of each (what CI runs, as tests/whole/test_campaign.py)
    python bench/campaign.py --only fuzz concurrency --json results.json

Parts (each real, nothing mocked; see docs/reliability.md):
- worker kills: the engine worker SIGKILLed at random points of a compile, --kills times
  (default 20) in a row under each front end that compiles (`watch`, the language server,
  the TUI); after each the store passes doctor's check, no committed run is lost, the front
  end said what happened and stays up, and the next compile succeeds;
- user-code faults: a factory that raises, calls os._exit, segfaults, allocates until the
  worker's memory cap, or hangs past the compile timeout, under each front end;
- store faults: bad database files, a read-only mount, a full tmpfs, missing and edited
  generated files, interrupted writes: one clear message each, doctor repairs what it can;
- concurrency: N writer processes (and, in the full run, the language server, `watch` and
  CLI compiles) writing one store while M readers query it;
- fuzzing (hypothesis): malformed LSP messages and positions, damaged TORCH_TRACE logs and
  profiler traces, odd FILE:LINE strings, random bytes as a store, crafted stores (rows
  whose generated-file paths lead out of the store, odd names and values, huge line numbers).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for path in (REPO, REPO / "bench", REPO / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

from faults.common import FAULTS, Tally  # noqa: E402

PARTS = ("kills", "user-code", "store", "concurrency", "fuzz")


def run_campaign(parts: list[str], quick: bool, kills: int, front_ends: list[str]) -> dict:
    from faults import concurrency, fuzz, injection, store_faults

    tallies: list[Tally] = []
    started = time.perf_counter()
    if "kills" in parts:
        for name in front_ends:
            tallies.append(_timed(injection.worker_kills, name, kills))
    if "user-code" in parts:
        for name in front_ends:
            faults = ["raises", "os_exit", "segfault"] if quick else list(FAULTS)
            tallies.append(_timed(injection.user_code_faults, name, faults))
    if "store" in parts:
        tallies.append(_timed(store_faults.run))
    result = {"tallies": [asdict(tally) for tally in tallies]}
    if "concurrency" in parts:
        result["concurrency"] = (concurrency.run(writers=3, runs_per_writer=6, readers=2, real=False) if quick
                                 else concurrency.run(writers=4, runs_per_writer=20, readers=4, real=True))
    if "fuzz" in parts:
        result["fuzz"] = fuzz.run(examples=25 if quick else 300)
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["totals"] = totals(result)
    return result


def _timed(function, *args) -> Tally:
    began = time.perf_counter()
    print(f"… {function.__module__.split('.')[-1]}.{function.__name__}{args}", file=sys.stderr, flush=True)
    tally = function(*args)
    print(f"  {tally.name}: {tally.survived}/{tally.injected} survived, {tally.runs_lost} runs lost "
          f"({time.perf_counter() - began:.0f}s){'; ' + '; '.join(tally.failures[:3]) if tally.failures else ''}",
          file=sys.stderr, flush=True)
    return tally


def totals(result: dict) -> dict:
    tallies = result["tallies"]
    concurrency = result.get("concurrency") or {}
    fuzz = result.get("fuzz") or {}
    return {
        "faults_injected": sum(t["injected"] for t in tallies),
        "survived": sum(t["survived"] for t in tallies),
        "runs_lost": sum(t["runs_lost"] for t in tallies) + concurrency.get("runs_lost", 0),
        "malformed_inputs": fuzz.get("inputs", 0),
        "crashes": fuzz.get("crashes", 0),
        "hangs": fuzz.get("hangs", 0),
        "tracebacks_shown": fuzz.get("tracebacks", 0),
        "reads_outside_store": fuzz.get("reads_outside", 0),
        "lock_errors": concurrency.get("lock_errors", 0),
        "half_runs_seen": concurrency.get("half_runs_seen", 0),
    }


def render(result: dict) -> str:
    lines = ["kernelscope reliability campaign", ""]
    for tally in result["tallies"]:
        landed = f", {tally['landed']} mid-compile" if tally["landed"] else ""
        leftovers = f", {tally['leftovers']} staging leftovers (doctor removes)" if tally["leftovers"] else ""
        lines.append(f"  {tally['name']:<34} {tally['survived']:>3}/{tally['injected']:<3} survived{landed}, "
                     f"{tally['runs_lost']} runs lost{leftovers}")
        for message in tally["messages"][:3]:
            lines.append(f"      said: {message[:150]}")
        for failure in tally["failures"][:5]:
            lines.append(f"      FAILED: {failure[:200]}")
    concurrency = result.get("concurrency")
    if concurrency:
        lines.append(f"  concurrency: {concurrency['writers']} writers x {concurrency['readers']} readers: "
                     f"{concurrency['runs_written']} runs written, {concurrency['runs_found']} found, "
                     f"{concurrency['runs_lost']} lost; {concurrency['reader_queries']} reader queries, "
                     f"{concurrency['half_runs_seen']} half runs seen, {concurrency['lock_errors']} lock errors, "
                     f"{concurrency['other_errors']} other errors; longest write wait "
                     f"{concurrency['max_write_seconds']:.2f}s")
        for writer, count in sorted(concurrency["by_writer"].items()):
            lines.append(f"      {writer}: {count} run(s)")
    fuzz = result.get("fuzz")
    if fuzz:
        lines.append(f"  fuzzing: {fuzz['inputs']} malformed inputs: {fuzz['crashes']} crashes, {fuzz['hangs']} hangs, "
                     f"{fuzz['tracebacks']} tracebacks shown, {fuzz['reads_outside']} reads outside the store")
        for target, count in sorted(fuzz["by_target"].items()):
            lines.append(f"      {target}: {count}")
        for problem in fuzz["problems"][:5]:
            lines.append(f"      FAILED: {problem[:200]}")
    t = result["totals"]
    lines += ["", f"faults injected: {t['faults_injected']}, survived: {t['survived']}, runs lost: {t['runs_lost']}",
              f"malformed inputs tried: {t['malformed_inputs']}, crashes: {t['crashes']}, hangs: {t['hangs']}, "
              f"tracebacks shown: {t['tracebacks_shown']}, reads outside the store: {t['reads_outside_store']}",
              f"({result['seconds']:.0f}s)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a few of each (CI)")
    parser.add_argument("--kills", type=int, help="worker kills per front end (default: 20, --quick: 2)")
    parser.add_argument("--front-ends", nargs="+", default=["watch", "lsp", "tui"], choices=["watch", "lsp", "tui"])
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    kills = args.kills if args.kills is not None else (2 if args.quick else 20)
    result = run_campaign(args.only, args.quick, kills, args.front_ends)
    print(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, sort_keys=True))
    t = result["totals"]
    healthy = (t["survived"] == t["faults_injected"] and t["runs_lost"] == 0 and t["crashes"] == 0
               and t["hangs"] == 0 and t["tracebacks_shown"] == 0 and t["lock_errors"] == 0
               and t["half_runs_seen"] == 0 and not any(tally["failures"] for tally in result["tallies"]))
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
