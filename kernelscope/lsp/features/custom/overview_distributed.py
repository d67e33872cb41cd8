"""The run overview's `distributed` section (`kernelscope/runOverview`): a rank's run of a
distributed job as the overview shows it, worded by kernelscope.render.distributed (the
words `kernelscope query` and the hovers use). Not a request of its own.

`{rank: {rank, worldSize, backend, job, label}, ranks: [{rank, runId}], code, graphs:
[{graph, split, wrapperUri, order, steps, collectives}]}`; None for a run that is no
rank of a job and has neither collectives nor a DDP split. 0-based lines.
"""
from __future__ import annotations


def distributed_section(run, uri) -> dict | None:
    """The run's rank, its job's ranks, which of them compiled identical code, and per graph
    the compute/communication order and its collectives (kernelscope.render.distributed's words)."""
    from kernelscope.render import distributed as text

    view = run.distributed()
    if not text.has_content(view):
        return None
    rank = view.rank
    return {
        "rank": None if rank is None else {"rank": rank.rank, "worldSize": rank.world_size, "backend": rank.backend,
                                           "job": rank.job, "label": text.rank_text(rank.rank, rank.world_size,
                                                                                    rank.backend)},
        "ranks": [{"rank": other.rank, "runId": other.run_id} for other in view.job_ranks],
        "code": text.code_lines(view),
        "graphs": [{"graph": graph.graph, "split": graph.split.label if graph.split else None,
                    "wrapperUri": uri(graph.wrapper_file or None), "order": text.order_text(graph.order),
                    "steps": [{"line": step.line - 1, "kind": step.kind, "name": step.name} for step in graph.order],
                    "collectives": [{"text": text.collective_line(collective), "op": collective.op,
                                     "role": collective.role, "module": collective.module,
                                     "modelUri": uri(collective.model_line.file) if collective.model_line else None,
                                     "modelLine": collective.model_line.line - 1 if collective.model_line else None,
                                     "wrapperLines": [line - 1 for line in collective.wrapper_lines]}
                                    for collective in graph.collectives if collective.role != "wait"]}
                   for graph in view.graphs if graph.collectives or graph.split],
    }
