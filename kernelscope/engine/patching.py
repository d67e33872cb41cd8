"""The one way kernelscope changes torch and Triton internals: declared patch points.

kernelscope sees what Inductor does, and emulates a GPU without one, by replacing
functions, properties and table entries inside torch and Triton that have no public API.
Each such place is a `PatchPoint`, declared once in `patch_points.py` with what kernelscope
expects of it there (the attribute, defined on the owner itself or inherited, the leading
parameter names a wrapper relies on, the torch versions it applies to). This module:

- checks a point against the installed torch (`PatchPoint.check`: None when it holds,
  else why not), so a changed torch is found before anything is replaced;
- replaces and restores through one context manager, `Patches` (`replace`, `wrap`,
  `set_item`; everything put back, last first, on exit). The value put back is the one
  the owner itself held (a staticmethod, a property), or the attribute is deleted again
  where it was inherited;
- installs groups of points that switch their feature off together (`install_groups`):
  a group with a point that does not hold is left out whole and said in a line the run
  carries in its warnings ("line-level provenance ... kernel-level only (kernel_lines: ...)");
- raises PatchPointChanged, before anything is replaced, naming every point of a list
  that does not hold (`checked`).

Which points there are, and the check of a whole feature that cannot work in part
(`patch_points.require`), is the register's (patch_points.py); this module knows no point.
`kernelscope doctor --torch` lists every point with its status (engine/torch_doctor.py).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelscope.errors import UserError

_MISSING = object()


class PatchPointChanged(UserError):
    """A patch point does not look as kernelscope expects on this torch."""

    exit_code = 3


@dataclass(frozen=True)
class PatchPoint:
    """One place inside torch or Triton that kernelscope replaces while it records."""

    feature: str  # what stops working without it: "line provenance", "virtual-cuda", ...
    owner: str  # dotted path of the module, class or object that holds it
    attribute: str
    why: str  # what kernelscope does there, in a few words
    parameters: tuple[str, ...] = ()  # leading parameter names the replacement relies on
    keywords: tuple[str, ...] = ()  # parameter names it passes by keyword
    own: bool = False  # read as owner.__dict__[attribute]: must be defined on the owner itself
    optional: bool = False  # absent on some torch versions, where there is nothing to patch
    adds: bool = False  # kernelscope adds the attribute where torch lacks it (a fix)
    item: str = ""  # the attribute is a mapping; this dotted path is the key replaced in it
    versions: str = ""  # torch versions it applies to (torch_compat.in_range), "" for all

    @property
    def name(self) -> str:
        return self.path + (f"[{self.item}]" if self.item else "")

    @property
    def path(self) -> str:
        return f"{self.owner}.{self.attribute}"

    def applies(self) -> bool:
        from kernelscope.engine import torch_compat

        return not self.versions or torch_compat.in_range(self.versions)

    def owner_object(self):
        return resolve(self.owner)

    def present(self) -> bool:
        """Whether there is something to patch on this torch (an optional point may be absent)."""
        try:
            owner = self.owner_object()
        except (ImportError, AttributeError):
            return False
        if self.adds:
            return self.attribute not in vars(owner)
        return self.attribute in vars(owner) if self.own else hasattr(owner, self.attribute)

    def holds(self) -> bool:
        """Present on this torch and as expected: an optional point is patched only then."""
        return self.present() and self.check() is None

    def current(self):
        """The value as code reads it (`getattr`: a staticmethod's function, a class's method)."""
        return getattr(self.owner_object(), self.attribute)

    def own_value(self):
        """The value the owner itself holds (the property, staticmethod or classmethod object)."""
        return vars(self.owner_object())[self.attribute]

    def check(self) -> str | None:
        """None if the point looks as expected on this torch (or is optional and absent), else why not."""
        try:
            owner = self.owner_object()
        except (ImportError, AttributeError) as error:
            return None if self.optional else f"{self.owner} is missing ({error})"
        if self.adds:
            return None  # where torch has it already, nothing is added
        if self.own and self.attribute not in vars(owner):
            return None if self.optional else f"{self.path} is no longer defined on {_short(self.owner)} itself"
        if not hasattr(owner, self.attribute):
            return None if self.optional else f"{self.path} is missing"
        target = getattr(owner, self.attribute)
        if self.item:
            try:
                key = resolve(self.item)
            except (ImportError, AttributeError) as error:
                return f"{self.item} is missing ({error})"
            if key not in target:
                return f"{self.path} has no entry for {self.item}"
        if self.parameters:
            try:
                parameters = tuple(inspect.signature(target).parameters)
            except (TypeError, ValueError):
                return f"{self.path} has no inspectable signature"
            if parameters[: len(self.parameters)] != self.parameters:
                return f"{_short(self.owner)}.{self.attribute}{parameters} no longer takes {self.parameters}"
            missing = [name for name in self.keywords if name not in parameters]
            if missing:
                return f"{_short(self.owner)}.{self.attribute}{parameters} has no parameter {', '.join(missing)}"
        return None


@dataclass(frozen=True)
class CustomPoint:
    """A change to torch made other than through an attribute (c10's guard registry through
    ctypes, a dispatch-mode slot), with its own check."""

    feature: str
    name: str
    why: str
    test: Callable[[], str | None]  # None when it holds, else why not
    versions: str = ""

    def applies(self) -> bool:
        from kernelscope.engine import torch_compat

        return not self.versions or torch_compat.in_range(self.versions)

    def check(self) -> str | None:
        try:
            return self.test()
        except Exception as error:  # noqa: BLE001 - a check reports, never raises
            return f"{type(error).__name__}: {error}"


def resolve(path: str):
    """The object a dotted path names in code: attributes from the top package down, a
    submodule imported where it is not an attribute yet (`triton.runtime.driver` is the
    driver object its package binds, as code that writes it reads it)."""
    parts = path.split(".")
    found = importlib.import_module(parts[0])
    for index, part in enumerate(parts[1:], 2):
        try:
            found = getattr(found, part)
        except AttributeError:
            if not inspect.ismodule(found):
                raise
            found = importlib.import_module(".".join(parts[:index]))
    return found


def _short(owner: str) -> str:
    return owner.rsplit(".", 1)[-1]


class Patches:
    """Patch points replaced while inside, put back on exit (last first)."""

    def __init__(self):
        self._undo: list[Callable[[], None]] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()

    def replace(self, point: PatchPoint, value) -> None:
        """Set `point` to `value` (the raw attribute: wrap in staticmethod/property as needed)."""
        problem = point.check()
        if problem:
            raise PatchPointChanged(f"{point.feature}: {problem}")
        owner = point.owner_object()
        before = vars(owner).get(point.attribute, _MISSING)
        setattr(owner, point.attribute, value)

        def undo():
            if before is _MISSING:
                delattr(owner, point.attribute)
            else:
                setattr(owner, point.attribute, before)

        self._undo.append(undo)

    def assign(self, point: PatchPoint, value) -> None:
        """Set a setting (a Triton knob, whose attributes are descriptors) to `value`; the
        value read before is written back on exit."""
        problem = point.check()
        if problem:
            raise PatchPointChanged(f"{point.feature}: {problem}")
        owner = point.owner_object()
        before = getattr(owner, point.attribute)
        setattr(owner, point.attribute, value)
        self._undo.append(lambda: setattr(owner, point.attribute, before))

    def wrap(self, point: PatchPoint, make: Callable[[Any], Any], keep_signature: bool = False) -> None:
        """Set `point` to `make(original)`; `keep_signature`: the replacement carries the
        original's name and signature (for patches installed on top of another)."""
        problem = point.check()
        if problem:
            raise PatchPointChanged(f"{point.feature}: {problem}")
        original = point.current()
        replacement = make(original)
        if keep_signature:
            replacement = functools.wraps(original)(replacement)
        self.replace(point, replacement)

    def set_item(self, point: PatchPoint, mapping, key, value, after: Callable[[], None] = lambda: None) -> None:
        """`mapping[key] = value` in a table `point` declares (a dispatcher table of an op:
        `point` is checked on a sample); put back or removed on exit, `after` run both times."""
        problem = point.check()
        if problem:
            raise PatchPointChanged(f"{point.feature}: {problem}")
        before = mapping.get(key, _MISSING)
        mapping[key] = value
        after()

        def undo():
            if mapping.get(key) is value:  # not replaced by someone else meanwhile
                if before is _MISSING:
                    del mapping[key]
                else:
                    mapping[key] = before
            after()

        self._undo.append(undo)

    def callback(self, undo: Callable[[], None]) -> None:
        """Run `undo` on exit with the rest (for a change made through torch's own API)."""
        self._undo.append(undo)


@contextlib.contextmanager
def replaced(point: PatchPoint, value):
    """`point` set to `value` while inside."""
    with Patches() as patches:
        patches.replace(point, value)
        yield


@contextlib.contextmanager
def wrapped(point: PatchPoint, make: Callable[[Any], Any]):
    """`point` set to `make(original)` while inside."""
    with Patches() as patches:
        patches.wrap(point, make)
        yield


def install_groups(patches: Patches, groups: dict[str, list[tuple[PatchPoint, Callable[[Any], Any]]]],
                   keep_signature: bool = False) -> list[str]:
    """Install each group of (point, make replacement from the original) whose points all
    hold; a group with a point that does not is left out whole. Returns a line per group
    left out: "group: why"."""
    off = []
    for group, entries in groups.items():
        problems = [problem for problem in (point.check() for point, _ in entries) if problem]
        if problems:
            off.append(f"{group}: {'; '.join(problems)}")
            continue
        for point, make in entries:
            patches.wrap(point, make, keep_signature)
    return off


def checked(*points) -> None:
    """Raise PatchPointChanged naming every point of `points` that does not hold."""
    problems = [problem for point in points if (problem := point.check())]
    if problems:
        raise PatchPointChanged(f"{points[0].feature}: {'; '.join(problems)}")
