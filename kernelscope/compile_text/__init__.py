"""Text that torch.compile writes, parsed without torch: shared by the engine and trace_import.

The engine reads these texts in-process while it records; `kernelscope import` reads the
same texts from a TORCH_TRACE log. Both parse them here, so a recording and an import
agree line for line. Nothing in this package imports torch, triton or the engine
(tests/whole/test_layers.py holds it to that): only the standard library, `kernelscope.run_record`
and `kernelscope.errors`.

Map:
- `wrapper_code`  — an Inductor Python wrapper: kernel definitions, the `call` body,
  launches, extern calls, and what each wrapper line does;
- `cpp_wrapper_code` — the same for an Inductor C++ wrapper (AOTInductor's `run_impl`,
  cpp_wrapper mode's entry), and the C++ taken out of cpp_wrapper mode's Python module;
- `printed_graph` — a printed FX graph (`GraphModule.print_readable()`): the line of each node;
- `stack_traces`  — Dynamo's printed stack traces: their frames, the user's frames;
- `trace_records` — a structured-trace record's kind, from its metadata (TORCH_TRACE's records);
- `graph_breaks`  — the text of a `dynamo_graph_break_reason` artifact, as a GraphBreak.
- `guards`        — guards, specializations and recompile reasons from the trace's records
  (`guard_added_fast`, `dynamo_cpp_guards_str`, `recompile_reasons`, ...), as Guard and
  GuardFailure records (docs/why.md).
- `wrapper_memory` — a wrapper's allocation timeline (allocations, reuses, views, frees) and
  its peak, given each buffer's size.

A new parser belongs here when both the engine and trace_import need it and it reads
text or JSON only; what needs live torch objects stays in the engine (`engine/fx_nodes.py`).
"""
