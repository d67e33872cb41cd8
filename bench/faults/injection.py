"""Worker faults under each front end: the real engine worker SIGKILLed at random points
of a compile, and user code that raises, calls os._exit, segfaults, exhausts memory or
hangs. After each: the store is consistent (doctor's check: integrity, every run whole,
every generated file as written, no committed run lost), the front end said what
happened and is still up, and the next compile succeeds."""
from __future__ import annotations

import asyncio
import random

from faults.common import (
    BUILD_TIMEOUT,
    EXPECTED_KIND,
    FAULTS,
    Tally,
    check_store,
    kill,
    make_workspace,
    remove,
)
from faults.frontends import FRONT_ENDS

PHASES = ("import", "capture", "lower", "codegen")


async def _with_front_end(name: str, body, tally: Tally):
    workspace = make_workspace(name)
    store = workspace / ".kernelscope"
    front_end = FRONT_ENDS[name](workspace, store)
    try:
        first = await front_end.start()
        return await body(front_end, store, {first})
    finally:
        try:
            await front_end.stop()
        except Exception as error:  # noqa: BLE001 - closing must be clean too: a failure, not a stop
            tally.fail(f"the {name} front end failed while closing: {type(error).__name__}: {error}")
        finally:
            remove(workspace)


async def _next_compile_ok(front_end, tally: Tally, committed: set[int], counter: int) -> bool:
    await front_end.begin_compile(counter)
    outcome = await front_end.finish(300)
    if outcome.kind != "ok":
        tally.fail(f"the compile after the fault failed: {outcome.kind}: {outcome.message}")
        return False
    committed.add(outcome.run_id)
    return True


async def _alive(front_end) -> bool:
    if not front_end.alive():
        return False
    answers = getattr(front_end, "answers", None)
    return await answers() if answers else True


def worker_kills(name: str, count: int, seed: int = 20) -> Tally:
    """`count` SIGKILLs of the worker under front end `name`, each at a random point: after a
    random phase notification plus up to 0.08 s, or a random delay up to 0.5 s into the compile (a warm
    recompile of the model takes about 0.35 s here)."""
    tally = Tally(f"worker SIGKILL under {name}")
    rng = random.Random(seed)

    async def body(front_end, store, committed):
        for index in range(count):
            await front_end.begin_compile(2 * index + 1)
            if rng.random() < 0.6:
                phase = rng.choice(PHASES)
                await front_end.wait_phase(phase)
                await asyncio.sleep(rng.uniform(0.0, 0.08))
            else:
                await asyncio.sleep(rng.uniform(0.0, 0.5))
            pid = front_end.worker_pid()
            tally.injected += 1
            if pid is None or not kill(pid):
                tally.fail(f"kill {index}: no worker process to kill")
                continue
            outcome = await front_end.finish(180)
            if outcome.kind == "ok":
                committed.add(outcome.run_id)  # the compile ended before the kill: an idle worker died
            elif outcome.kind == "crash":
                tally.landed += 1
                tally.say(outcome.message)
            else:
                tally.fail(f"kill {index}: the front end reported {outcome.kind}: {outcome.message}")
                continue
            tally.say(await front_end.recovered(outcome))
            consistent = check_store(store, committed, tally)
            next_ok = await _next_compile_ok(front_end, tally, committed, 2 * index + 2)
            alive = await _alive(front_end)
            if not alive:
                tally.fail(f"kill {index}: the front end is gone")
            if consistent and next_ok and alive:
                tally.survived += 1
        check_store(store, committed, tally)

    asyncio.run(_with_front_end(name, body, tally))
    return tally


def user_code_faults(name: str, faults: list[str] | None = None) -> Tally:
    """Each fault of FAULTS once under front end `name`: the kind it reports must be the
    expected one, the front end stays up, the store is intact, the next compile succeeds."""
    tally = Tally(f"user-code faults under {name}")

    async def body(front_end, store, committed):
        for index, fault in enumerate(faults or list(FAULTS)):
            tally.injected += 1
            await front_end.break_model(fault)
            outcome = await front_end.finish(BUILD_TIMEOUT + 180)
            if outcome.kind not in EXPECTED_KIND[fault]:
                tally.fail(f"{fault}: reported {outcome.kind}: {outcome.message}")
                await front_end.recovered(outcome)
                continue
            tally.say(f"{fault}: {outcome.message}")
            await front_end.recovered(outcome)
            consistent = check_store(store, committed, tally)
            next_ok = await _next_compile_ok(front_end, tally, committed, 100 + index)
            alive = await _alive(front_end)
            if not alive:
                tally.fail(f"{fault}: the front end is gone")
            if consistent and next_ok and alive:
                tally.survived += 1

    asyncio.run(_with_front_end(name, body, tally))
    return tally
