"""Exit codes, and the one way every command tells the user what went wrong (on standard error).

A command's own problem reads ``autoscaler COMMAND: message``; a file's problems are listed under the file,
each with its path in the document (:func:`~autoscaler.values.fields.problem_report`).
"""

from __future__ import annotations

import sys

from autoscaler.values.fields import SpecError, problem_report

EXIT_OK = 0
EXIT_FAILED = 1  # the input was good, the work failed: history that cannot be read, a plot not written
EXIT_INVALID = 2  # bad input: a file, a flag, a setting, a time (argparse's own code for a bad command line)
EXIT_INCOMPLETE = 3  # done in part: what could not be is named on stderr (convert without --strict lost something)
EXIT_BROKEN_PIPE = 1  # Python's own exit code on EPIPE
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as a shell reports it


def say(command: str, message: str) -> None:
    """``autoscaler COMMAND: message`` on standard error."""
    print(f"autoscaler {command}: {message}", file=sys.stderr)


def fail(command: str, message: str, code: int = EXIT_INVALID) -> int:
    """Say ``message`` and give the exit code to return (bad input unless told otherwise)."""
    say(command, message)
    return code


def invalid_file(source: str, error: SpecError) -> int:
    """List every problem of ``source`` (a file, or what stands for one) and give :data:`EXIT_INVALID`."""
    print(problem_report(source, error), file=sys.stderr)
    return EXIT_INVALID
