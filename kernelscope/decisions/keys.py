"""The keys of decisions that can be computed from generated code alone (no torch).

- A Triton kernel's launch config (`triton_config`): Inductor's autotune cache keys a
  kernel by its code (the file name is a hash of the source) and its configs; here the
  key is the kernel's name and a hash of its function (`def triton_...` to its end),
  which is what the autotuner compiles and times. The decorator's device properties
  are left out: they say which GPU, and the GPU is checked on its own.
- A module Inductor times to decide a fusion (`fusion_benchmark`): a hash of its code,
  without what names a machine (Triton's backend hash, Inductor's cache paths).
"""
from __future__ import annotations

import ast
import hashlib
import re

_BACKEND_HASH = re.compile(r"('backend_hash':\s*)'[0-9A-Fa-f]+'")
_CACHE_PATH = re.compile(r"(?:/[^\s'\"]*)?/(?:torchinductor_[^/\s'\"]+|tmp[^/\s'\"]*)/[^\s'\"]*")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def kernel_function_source(kernel_name: str, module_source: str) -> str | None:
    """The source of `def <kernel_name>(...)` in a kernel module, without its decorators;
    None when the module does not define it."""
    try:
        tree = ast.parse(module_source)
    except SyntaxError:
        return None
    lines = module_source.splitlines()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == kernel_name and node.end_lineno is not None:
            return "\n".join(lines[node.lineno - 1:node.end_lineno])
    return None


def triton_config_key(kernel_name: str, module_source: str) -> str | None:
    """`name:hash-of-its-function`; None for a module without the kernel."""
    function = kernel_function_source(kernel_name, module_source)
    return None if function is None else f"{kernel_name}:{_digest(function)}"


def portable_module_source(source: str) -> str:
    """Generated code without what differs between machines: Triton's backend hash
    (its ptxas and source hash) and temporary or cache directories."""
    return _CACHE_PATH.sub("<path>", _BACKEND_HASH.sub(r"\1'<backend>'", source))


def module_key(source: str) -> str:
    return f"module:{_digest(portable_module_source(source))}"
