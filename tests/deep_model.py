"""A deep model that is cheap to record: examples/nanogpt.py with 12 blocks at the
example's width (bench/models/nanogpt_deep.py:make_12_small), training. Its loop
line reaches 12 instances of Block, most of them alike (the first and last fuse
with the embedding and the final norm): what folding is tested on."""
from __future__ import annotations

from pathlib import Path

from conftest import REPO, example_line

DEEP_SPEC = f"{REPO / 'bench' / 'models' / 'nanogpt_deep.py'}:make_12_small"
NANOGPT = "examples/nanogpt.py"
LOOP_LINE = example_line("nanogpt", "    x = block(x)")
GELU_LINE = example_line("nanogpt", 'approximate="tanh"')


def deep_run(recordings):
    """The deep model's training run (recorded once per test session)."""
    return recordings.get_spec(DEEP_SPEC, train=True)


def deep_store(recordings, root: Path):
    """A store at `root` holding the deep model's run (a StoreBackend, open)."""
    from kernelscope.store import StoreBackend

    store = StoreBackend(root)
    store.write_run(deep_run(recordings))
    return store
