"""The two kinds of error a user can act on, shared by every layer (a leaf: it imports nothing).

    UserError      the input is wrong: a config, a data file, a run directory, a path.
                   The message names the file, line or field; the command exits 2.
    ExternalFault  something outside the program failed mid-work: a disk, a server, a
                   checkpoint write. The input may be fine and a retry or a resume may
                   succeed; the command exits 3 (rlvr.cli.exit_codes).

Any other exception is a bug and keeps its traceback. A module's own error class derives
from one of these (next to the builtin it has always been, so existing `except
ValueError` handlers still catch it), and the CLI catches the two bases instead of a
list of every module's classes.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input the user can fix; the message says where (exit code 2)."""


class ExternalFault(Exception):
    """A failure outside the program; the work done so far is kept (exit code 3)."""
