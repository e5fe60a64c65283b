"""What a SIGKILL loses with checkpoints on (`LEPTON_CHECKPOINT_S`): a program records one scope
every 0.1 s, named by its time since start; it is killed with SIGKILL (no handler, no atexit)
at --kill-at-s, and the profile it leaves is read back.

usage:  python bench/checkpoint_kill.py [--run-s 60] [--every-s 5] [--kill-at-s 55] [--keep DIR]

Prints one `key=value` per line: the last second recorded in the profile left behind (`kept_s`), the
time of the kill (`killed_at_s`), what was lost (`lost_s`, at most --every-s plus the time a checkpoint
takes), and the checkpoint files written. Exits 1 if no valid profile was left or more than
--every-s + 1 s was lost. The issue's full run is the default (60 s, checkpoints every 5 s);
tests/integration/test_checkpoints.py runs it scaled down (12 s, every 2 s, killed at 10 s).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")

PROGRAM = """\
import sys, time
import lepton as proton
proton.start("killed", backend="cpu")
t0 = time.monotonic()
print("started", flush=True)
end = t0 + float(sys.argv[1])
while time.monotonic() < end:
    with proton.scope("t%.1f" % (time.monotonic() - t0), {"step": 1}):
        time.sleep(0.1)
proton.finalize()
print("finished", flush=True)
"""


def run(run_s: float, every_s: float, kill_at_s: float, folder: str) -> dict:
    """Runs the program in `folder`, kills it at `kill_at_s` (measured from its "started" line);
    returns what the profile left behind holds."""
    env = {**os.environ, "LEPTON_CHECKPOINT_S": str(every_s),
           "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    env.pop("LEPTON_DISABLE", None)
    env.pop("TRITON_PROTON_DISABLE", None)
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM, str(run_s)], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if line.strip() != "started":
            raise RuntimeError(f"the program did not start: {line!r} {proc.stderr.read()!r}")
        started = time.monotonic()
        time.sleep(max(0.0, kill_at_s - (time.monotonic() - started)))
        killed_at = time.monotonic() - started
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    path = os.path.join(folder, "killed.hatchet")
    result = {"killed_at_s": round(killed_at, 2), "returncode": proc.returncode, "path": path,
              "stderr": proc.stderr.read()}
    if not os.path.exists(path):
        result["times"] = None
        return result
    with open(path, "rb") as f:
        document = json.loads(f.read())  # strict: a half-written file raises here
    result["times"] = sorted(float(c["frame"]["name"][1:]) for c in document[0]["children"])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-s", type=float, default=60)
    parser.add_argument("--every-s", type=float, default=5)
    parser.add_argument("--kill-at-s", type=float, default=55)
    parser.add_argument("--keep", help="run in this folder (default: a temporary one, removed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or scratch
        os.makedirs(folder, exist_ok=True)
        result = run(args.run_s, args.every_s, args.kill_at_s, folder)
    times = result["times"]
    print(f"killed_at_s={result['killed_at_s']}")
    print(f"returncode={result['returncode']}")
    if not times:
        print("kept_s=none")
        return 1
    lost = result["killed_at_s"] - times[-1]
    print(f"kept_s={times[-1]:.1f}")
    print(f"scopes={len(times)}")
    print(f"lost_s={lost:.1f}")
    return 0 if lost <= args.every_s + 1 else 1


if __name__ == "__main__":
    sys.exit(main())
