"""Initialization options (and the "kernelscope" section of didChangeConfiguration).

Every field has a default; keys are the camelCase names of the contract. Options
the client did not give are remembered as not given, so that `[tool.kernelscope]`
in pyproject.toml can fill them (the client's choice wins when it gives one).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

DEVICE_TARGETS = ("auto", "cuda", "virtual-cuda", "cpu-triton", "cpu")

# option field -> contract key
_KEYS = {
    "target": "target",
    "device_target": "deviceTarget",
    "train": "train",
    "dynamic": "dynamic",
    "store": "store",
    "inlay_hints": "inlayHints",
    "compile_timeout": "compileTimeout",
    "python": "python",
    "memory_limit": "memoryLimit",
    "path_map": "pathMap",
    "asm_after_compile": "asmAfterCompile",
    "decisions": "decisions",
    "trusted": "trusted",
}


class OptionsError(ValueError):
    """An option of the wrong type or value; the message names the key."""


@dataclass
class ServerOptions:
    target: str | None = None  # PATH.py:FACTORY or a name from [tool.kernelscope] targets
    device_target: str = "auto"
    train: bool = False
    dynamic: bool = False
    store: str = ".kernelscope"  # relative to the workspace root
    inlay_hints: bool = True
    compile_timeout: float = 600.0  # seconds; a longer compile restarts the worker
    python: str | None = None  # the engine worker's interpreter; None: the server's own
    memory_limit: int | None = None  # MB: the engine worker's address-space cap; None: no cap
    path_map: tuple[str, ...] = ()  # RECORDED=LOCAL pairs (a store recorded elsewhere; see store.places)
    asm_after_compile: bool = False  # compile each new run's Triton kernels to PTX/SASS right after it is stored
    # virtual-cuda: a GPU's timing decisions to replay (a run id, a dump or decisions file, "none");
    # None: the workspace's default ([tool.kernelscope] decisions, else the store's decisions.json)
    decisions: str | None = None
    # False: the workspace is not trusted (VS Code's Restricted Mode), so nothing is compiled
    # (compiling runs its code); reading the store goes on. Once False it stays False for the
    # server's life: a client that comes to trust the workspace starts a new server.
    trusted: bool = True
    given: frozenset[str] = field(default_factory=frozenset)  # fields the client set

    @classmethod
    def from_dict(cls, raw: object, base: ServerOptions | None = None) -> ServerOptions:
        """`base` updated with the keys present in `raw` (a dict from the client)."""
        options = dataclasses.replace(base) if base is not None else cls()
        if raw is None:
            return options
        if not isinstance(raw, dict):
            raise OptionsError(f"kernelscope options must be an object, got {type(raw).__name__}")
        given = set(options.given)
        for name, key in _KEYS.items():
            if key not in raw:
                continue
            value = _checked(key, raw[key])
            if name == "trusted":
                value = options.trusted and value  # trust is only ever taken back, never given later
            setattr(options, name, value)
            given.add(name)
        options.given = frozenset(given)
        return options


def _checked(key: str, value):
    if key in ("target", "python", "decisions"):
        if value is not None and not isinstance(value, str):
            raise OptionsError(f"option '{key}' must be a string or null, got {value!r}")
        return value or None
    if key in ("train", "dynamic", "inlayHints", "asmAfterCompile", "trusted"):
        if not isinstance(value, bool):
            raise OptionsError(f"option '{key}' must be true or false, got {value!r}")
        return value
    if key == "deviceTarget":
        if value not in DEVICE_TARGETS:
            raise OptionsError(f"option 'deviceTarget' must be one of {', '.join(DEVICE_TARGETS)}, got {value!r}")
        return value
    if key == "store":
        if not isinstance(value, str) or not value:
            raise OptionsError(f"option 'store' must be a directory path, got {value!r}")
        return value
    if key == "compileTimeout":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise OptionsError(f"option 'compileTimeout' must be a positive number of seconds, got {value!r}")
        return float(value)
    if key == "memoryLimit":
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 256:
            raise OptionsError(f"option 'memoryLimit' must be a whole number of megabytes from 256, or null, "
                               f"got {value!r}")
        return value
    if key == "pathMap":
        if not isinstance(value, dict) or not all(isinstance(k, str) and k and isinstance(v, str) and v
                                                  for k, v in value.items()):
            raise OptionsError(f"option 'pathMap' must be an object of recorded path -> local path, got {value!r}")
        return tuple(f"{recorded}={local}" for recorded, local in value.items())
    raise OptionsError(f"unknown option {key!r}")
