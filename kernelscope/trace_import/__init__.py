"""Import TORCH_TRACE logs (what tlparse reads) as kernelscope runs, without torch.

`log_reader` turns a log into records, `collect` is the registry of record
parsers that gathers each rank's compiles, `graph_text` and `output_code` read
the logged graphs and output code, `to_run` builds a `RunRecord`, and `importer`
finds the logs and splits them by rank. What a live recording parses too (wrapper
code, printed graphs, stack traces, record kinds, graph breaks) comes from
`kernelscope.compile_text`, shared with the engine; nothing here imports the engine
or torch (tests/whole/test_layers.py), and nothing from a log is executed: logs are only
ever parsed as text and JSON.
"""
from kernelscope.trace_import.importer import ImportedRun, ImportOptions, LogImport, find_logs, import_log
from kernelscope.trace_import.log_reader import TraceLogError

__all__ = ["ImportOptions", "ImportedRun", "LogImport", "TraceLogError", "find_logs", "import_log"]
