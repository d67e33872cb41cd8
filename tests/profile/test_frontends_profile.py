"""GPU time in the front ends: a run imported from a real H100 job's TORCH_TRACE log,
with that job's profiler trace attached, shows device time in the language server's
code lenses and hovers of the model lines ("0.42 ms · 31% of step", shared when the
kernel serves several lines) and in the terminal explorer's kernel list."""
from __future__ import annotations

import gzip

import pytest
from lsp_support import REPO, line_of, start_session, uri
from test_profile import DATA, JOB_CHECKOUT

from kernelscope.profile.attach import attach_trace
from kernelscope.store import StoreBackend
from kernelscope.store.parts.profiles import line_times
from kernelscope.trace_import import ImportOptions, import_log

MLP = REPO / "examples" / "mlp.py"


@pytest.fixture(scope="module")
def profiled_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp-profile")
    log = root / "dedicated_log_torch_trace_job.log"
    log.write_bytes(gzip.decompress((DATA / "mlp_train.torch_trace.log.gz").read_bytes()))
    result = import_log(log, ImportOptions(workspace=REPO, path_map=[(JOB_CHECKOUT, str(REPO))]))
    with StoreBackend(root / "store") as store:
        run_id = store.write_run(result.runs[0].run)
        profile, _ = attach_trace(store, DATA / "mlp_train.trace.json.gz", run_id)
        times = {line: us for (file, line), (us, _shared) in line_times(profile).items()
                 if file == "examples/mlp.py"}
    return root / "store", times


async def test_lenses_and_hover_show_device_time(profiled_store):
    store, times = profiled_store
    assert times, "the attached trace gives the MLP's lines device time"
    session = await start_session(REPO, {"store": str(store)})
    try:
        session.open(MLP)
        lenses = await session.lenses(uri(MLP))
        timed = {lens.range.start.line + 1: lens.command.title for lens in lenses if "of step" in lens.command.title}
        assert set(timed) == {line for line, us in times.items() if us > 0}, (timed, times)
        gelu = line_of(MLP, "F.gelu(h)")
        assert "% of step" in timed[gelu + 1] and "shared" in timed[gelu + 1]  # fused with LayerNorm's line
        hover = (await session.hover(MLP, gelu)).contents.value
        assert "**GPU time**: " in hover and "of step" in hover
        print(timed[gelu + 1], hover.splitlines()[-1], sep="\n")
        assert "GPU time" not in ((await session.hover(MLP, line_of(MLP, "import torch"))) or "")
    finally:
        await session.stop()


def test_tui_kernel_list_shows_device_time(profiled_store):
    """The terminal explorer's kernel list gets a device-time column on a profiled run."""
    import asyncio

    from tui_support import SIZE, settle

    from kernelscope.tui.app import KernelscopeApp
    from kernelscope.tui.kernel_list import KernelList

    store, _ = profiled_store

    async def scenario():
        app = KernelscopeApp(store, run_id=1)
        async with app.run_test(size=SIZE) as pilot:
            kernels = app.query_one(KernelList)
            await settle(pilot, lambda: bool(kernels.rows))
            assert "device" in kernels.columns
            timed = [row for row in kernels.rows if row.device_time_us]
            assert timed and any("gelu" in row.name for row in timed)

    asyncio.run(scenario())
