"""``autoscaler run --record FILE``: every sync's inputs and decision appended to FILE as a JSON line.

A line is what :func:`autoscaler.simulate.recording.sync_line` makes of the sync; ``python -m
autoscaler.simulate.recording FILE --target NAMESPACE/NAME`` turns one target's lines into a scenario that
``autoscaler simulate`` replays with the same decisions (docs/simulate.md, "Replaying a recording").

The line is built on the event loop (it reads the sync's objects) and written by a thread of its own, so
that the loop never waits for the disk; each line is flushed whole, so a service that is killed leaves
at most its last line cut short (the reader leaves such a line out).
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
from typing import Any

import structlog

from autoscaler.core.observation import Observation
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.sync import SyncOutcome, SyncPlan, WriteResults
from autoscaler.service.cluster.targets import Target

log = structlog.get_logger("autoscaler.recorder")


class SyncRecorder:
    def __init__(self, path: str, settings: ControllerSettings) -> None:
        from autoscaler.simulate.recording import sync_line  # only a recording service needs the scenario format

        self._sync_line = sync_line
        self.path = path
        self._settings = settings
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the writer thread
        self._thread = threading.Thread(target=self._write_lines, name="sync recorder", daemon=True)
        self._thread.start()
        self._failed = False

    def record(
        self, target: Target, plan: SyncPlan, observation: Observation, results: WriteResults, outcome: SyncOutcome
    ) -> None:
        """Append one sync of ``target``."""
        try:
            spec: Any = json.loads(target.text.spec_json) if target.text.spec_json else None
            line = self._sync_line(
                f"{target.namespace}/{target.name}",
                spec,
                self._settings,
                plan,
                observation,
                results,
                outcome,
                target.metadata.pause_annotations,
            )
            self._lines.put(json.dumps(line, separators=(",", ":")))
        except Exception as exc:  # recording is a side show: it never stops a sync
            if not self._failed:
                self._failed = True
                log.warning(
                    "could not record a sync (this warning is not repeated)",
                    error=str(exc),
                    namespace=target.namespace,
                    name=target.name,
                )

    def _write_lines(self) -> None:
        broken = False
        with self._file:
            while (line := self._lines.get()) is not None:
                if broken:
                    continue  # keep taking lines, so that they do not pile up
                try:
                    self._file.write(line + "\n")
                    self._file.flush()
                except OSError as exc:
                    broken = True
                    log.warning("the recording cannot be written: recording stops", path=self.path, error=str(exc))

    async def close(self) -> None:
        """Write what is queued, then close the file."""
        self._lines.put(None)
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
