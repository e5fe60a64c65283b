"""Metrics the user asks for with -m: raw file metrics, and the derived ones, as a table.

Proton's rule for what is inclusive (hatchet's, in fact): the metrics present on ROOT are summed
over each subtree; every other metric is a per-node value. A raw metric and every formula below
read the inclusive sum when the metric is on ROOT and the node's own value otherwise.

Column labels are Proton's ("time/ms (inc)", "util", "count (inc)", "cpu_time (ns)"); they appear
in `--print-sorted`, csv and json output.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ...lepton_units import SECONDS_PER_UNIT  # noqa: F401  (replaced below)
