"""Errors a user can act on: what went wrong, where, and what to do next.

Every error reaches the user as one line; the chain behind it (an Inductor
exception, a SQLite error) is printed too when asked for: `--traceback` on the
command line, or `KERNELSCOPE_TRACEBACK=1` in the environment of the language
server, the TUI or any command (see docs/reliability.md).
"""
from __future__ import annotations

import os
import traceback

TRACEBACK_ENV = "KERNELSCOPE_TRACEBACK"
CLI_TRACEBACK_HINT = "--traceback shows the full error"
ENV_TRACEBACK_HINT = f"set {TRACEBACK_ENV}=1 for the full error in the log"


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


INTERNAL_EXIT_CODE = 70  # an unexpected error inside kernelscope (EX_SOFTWARE): a bug to report


def traceback_wanted() -> bool:
    """True when the user asked for full errors (`--traceback` sets the variable too)."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def full_error(error: BaseException) -> str:
    """The whole chain behind `error` (causes first), as Python prints it."""
    return "".join(traceback.format_exception(error))


def one_line(error: BaseException) -> str:
    """`error` as one line: a UserError's own message, else `Type: message`."""
    text = " ".join(str(error).split())
    if isinstance(error, UserError):
        return text or type(error).__name__
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class OneLineLogs:
    """A logging filter: records keep one line (the exception's own summary) unless full
    errors were asked for — libraries such as pygls log a traceback with every error
    response, which a user reading the language server's log would take for a crash."""

    def filter(self, record) -> bool:
        if traceback_wanted():
            return True
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message = f"{message}: {one_line(record.exc_info[1])}"
        if "Traceback (most recent call last)" in message:
            head, _, trace = message.partition("Traceback (most recent call last)")
            last = [line for line in trace.strip().splitlines() if line.strip()][-1:]
            message = (head.strip() + " " + " ".join(last)).strip()
        record.msg, record.args = message.replace("\n", " "), None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True
