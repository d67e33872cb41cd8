"""Errors a user can act on: what went wrong, where, and what to do next."""
from __future__ import annotations


class UserError(Exception):
    """An error caused by input (a path, a model, a store); printed as one line."""

    exit_code = 2


class TargetError(UserError):
    """The model target could not be loaded or run (missing file, factory raised, ...)."""

    exit_code = 3


class CompileError(UserError):
    """torch.compile / Inductor failed on the user's model."""

    exit_code = 4


class StoreError(UserError):
    """The store is missing, corrupt or does not hold what was asked for."""

    exit_code = 5
