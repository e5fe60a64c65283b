"""The hatchet vocabulary: every name a profile file holds that Lepton writes in one place and
reads back in another (writers, backends' extras, the viewer), defined once so they cannot drift.
"""
from __future__ import annotations

# The run's metadata (the command line, a backend's extras) goes in one more key of the ROOT node
# object, beside "frame", "metrics" and "children": hatchet's literal reader (Proton's viewer) reads
# only those three keys of a node, so it is ignored there. Not a ROOT metric (Proton's viewer would
# take it for an inclusive metric), not the device block (Proton's util walks every key of it as a
# device type), not a third list element (hatchet would take it for another root).
RUN_METADATA_KEY = "lepton"
# In the run's metadata (mode="pcsampling"): function -> [[PC offset, samples, instruction], ...],
# and function -> {"arch", "zlib_b64"}, the kernel's code that `lepton-view --sass` disassembles.
SASS_KEY = "sass"
SASS_CODE_KEY = "sass_code"

# Proton's state for GPU work launched while computing launch metadata: "<scope>:<kernel>" is two
# nodes, the scope, then the kernel; the viewers hide both with everything under them.
LAUNCH_METADATA_SCOPE = "__proton_launch_metadata"
LAUNCH_METADATA_PREFIX = LAUNCH_METADATA_SCOPE + ":"

# A kernel node's metrics, as Proton's writer names them.
TIME_NS = "time (ns)"
COUNT = "count"
DEVICE_ID = "device_id"
DEVICE_TYPE = "device_type"
# On ROOT: kernel records CUPTI dropped (its buffers were full).
DROPPED_RECORDS = "dropped_records"
# Instruction samples (mode="pcsampling"): a node's samples, and its stall reasons' prefix.
NUM_SAMPLES = "num_samples"
STALL_PREFIX = "stalled_"
