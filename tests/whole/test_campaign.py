"""The reliability campaign's fast part (bench/campaign.py --quick), as tests: the same
code the bench runs, with fewer faults. The fuzzing, concurrency and store-fault parts
need no compile; the worker faults drive the real front ends and are slow."""
from __future__ import annotations

import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

from faults import concurrency, fuzz, injection, store_faults  # noqa: E402


def test_fuzzing_finds_no_crash_hang_or_traceback():
    result = fuzz.run(examples=25)
    assert result["inputs"] >= 250
    assert set(result["by_target"]) == {"lsp", "trace_log", "profile_trace", "file_line", "store_bytes",
                                        "crafted_store"}
    assert result["by_target"]["crafted_store"] >= 250
    assert (result["crashes"], result["hangs"], result["tracebacks"], result["reads_outside"]) == (0, 0, 0, 0), \
        result["problems"]


def test_writers_and_readers_on_one_store_lose_nothing():
    result = concurrency.run(writers=3, runs_per_writer=6, readers=2)
    assert result["runs_written"] == 18 and result["runs_found"] == 18 and result["runs_lost"] == 0
    assert result["reader_queries"] > 0
    assert (result["half_runs_seen"], result["lock_errors"], result["other_errors"]) == (0, 0, 0), result["errors"]
    assert result["store_healthy"]


def test_store_faults_each_give_one_clear_message_and_doctor_repairs():
    tally = store_faults.run()
    assert tally.injected >= 8 and tally.survived == tally.injected, tally.failures


@pytest.mark.slow
@pytest.mark.parametrize("front_end", ["watch", "lsp", "tui"])
def test_worker_killed_mid_compile_under_each_front_end(front_end):
    tally = injection.worker_kills(front_end, 2)
    assert tally.injected == 2 and tally.survived == 2 and tally.runs_lost == 0, tally.failures
    assert any("SIGKILL" in message for message in tally.messages) or tally.landed == 0


@pytest.mark.slow
@pytest.mark.parametrize("front_end, faults", [
    ("watch", ["raises", "os_exit", "segfault", "memory", "hang"]),
    ("lsp", ["segfault", "memory"]),
])
def test_user_code_faults_are_clear_errors_and_the_front_end_stays_up(front_end, faults):
    tally = injection.user_code_faults(front_end, faults)
    assert tally.injected == len(faults) and tally.survived == len(faults), tally.failures
