"""Writing plot files: the format follows the file name (``.png`` with matplotlib, ``.html`` with
plotly); a missing library is reported with the command that installs it, before any work is done."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

from autoscaler.plot.series import PlotData

INSTALL = "pip install 'autoscaler[plot]'"
# Suffix → (library, what it writes).
FORMATS = {".png": ("matplotlib", "a PNG image"), ".html": ("plotly", "an interactive, self-contained HTML page")}


class PlotError(Exception):
    """A plot cannot be written (unknown format, library missing); the message says what to do."""


def check_outputs(paths: Sequence[str]) -> None:
    """Raise :class:`PlotError` unless every path can be written here."""
    problems = []
    for path in paths:
        suffix = Path(path).suffix.lower()
        if suffix not in FORMATS:
            problems.append(f"{path}: unknown plot format {suffix or '(no suffix)'!r}; use .png or .html")
            continue
        library, what = FORMATS[suffix]
        if importlib.util.find_spec(library) is None:
            problems.append(
                f"{path}: writing {what} needs {library}, which is not installed. Install the plot extra: {INSTALL}"
            )
        folder = Path(path).parent
        if not folder.is_dir():
            problems.append(f"{path}: there is no directory {str(folder)!r} to write it in")
        elif not os.access(folder, os.W_OK | os.X_OK):
            problems.append(f"{path}: the directory {str(folder)!r} is not writable")
    if problems:
        raise PlotError("\n".join(problems))


def write_plots(paths: Sequence[str], data: PlotData) -> None:
    """Write every plot; :class:`PlotError` when a file cannot be written after all (its directory
    went away, the disk is full)."""
    for path in paths:
        try:
            if Path(path).suffix.lower() == ".png":
                from autoscaler.plot.png import write_png

                write_png(data, path)
            else:
                from autoscaler.plot.html import write_html

                write_html(data, path)
        except OSError as exc:
            raise PlotError(f"{path}: cannot write it: {exc.strerror or exc}") from exc
