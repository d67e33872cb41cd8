"""Below the kernel on first ask, for the CLI's read commands: kernels with no build yet
are compiled by the engine worker (the CLI's read side never imports torch), then read
from the store."""
from __future__ import annotations

import os
import sys

from kernelscope.errors import UserError
from kernelscope.store import StoreBackend


def ensure_built(store: StoreBackend, run_id: int, kernel_files: list[str] | None = None,
                 quiet: bool = False) -> dict | None:
    """Build the run's kernels (those of `kernel_files`) that have no build yet; returns the
    worker's summary, or None when all were built already."""
    if not store.run(run_id).asm_unbuilt(kernel_files):
        return None
    from kernelscope.watch.worker_client import WorkerClient, WorkerCrashed, WorkerRequestError

    quiet = quiet or not sys.stderr.isatty()

    def progress(method: str, params: dict) -> None:
        if not quiet and params.get("phase") == "asm":
            sys.stderr.write(f"\rcompiling below Triton: {params.get('detail', '')[:100]:<100}")
            sys.stderr.flush()

    client = WorkerClient(python=sys.executable, cwd=os.getcwd(), on_output=lambda line: None)
    try:
        client.start()
        params = {"store": str(store.root), "run_id": run_id}
        if kernel_files is not None:
            params["kernel_files"] = sorted(set(kernel_files))
        return client.request("asm", params, on_notification=progress)
    except (WorkerRequestError, WorkerCrashed) as error:
        raise UserError(f"compiling run {run_id}'s kernels below Triton failed: {error} "
                        "(the run itself is unchanged)") from error
    finally:
        client.stop()
        if not quiet:
            sys.stderr.write("\r" + " " * 128 + "\r")
