"""The drain thread of instruction sampling: empties CUPTI's sample buffers while the program runs,
so that they never fill however long it runs, off the launching threads."""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable


class Drainer:
    """Calls `drain()` every `period_s` seconds on a daemon thread until `stop()`. An exception
    `drain` lets through ends the thread with one line; the caller's final drain still runs."""

    def __init__(self, drain: Callable[[], None], period_s: float) -> None:
        self._drain = drain
        self._period_s = period_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lepton-pcsampling-drain", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self._period_s):
            try:
                self._drain()
            except Exception as e:  # noqa: BLE001  (a thread's exception would only reach stderr raw)
                print(f"lepton: warning: instruction samples are no longer drained while the program runs "
                      f"({e}); they are read at finalize", file=sys.stderr)
                return

    def stop(self) -> None:
        """Ends the thread after its current pass."""
        self._stopping.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
