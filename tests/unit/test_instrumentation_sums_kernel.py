"""The Triton kernel of the sums (`sums_kernel`, through `TorchOps`) against the numpy sums
(`ArrayOps`), on the same buffers: real ones, a clock wrap, warps longer than one of the kernel's
blocks, random nestings, and each reason a batch goes to the host. Without a GPU the kernel runs in
Triton's interpreter; without torch and Triton the tests skip."""
import os
import random

import numpy as np
import pytest
from instrumentation_buffers import E, S, launch, recorded_batch, slot

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when the kernel is decorated, at its import
pytest.importorskip("triton")

from lepton.backends.instrumentation.layout import HEADER_BYTES
from lepton.backends.instrumentation.sums import (
    ArrayOps,
    BatchSums,
    HostReason,
    TorchOps,
    batch_sums,
    warm_up,
)
from lepton.backends.instrumentation.sums_kernel import BLOCK

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def on_device(buffers: list[np.ndarray]) -> list:
    """The buffers as one allocation cut in turn, as the backend's arena hands them out."""
    whole = torch.from_numpy(np.concatenate(buffers)).to(DEVICE)
    out, at = [], 0
    for b in buffers:
        out.append(whole[at:at + len(b)])
        at += len(b)
    return out


def both(buffers, scratch, units, scope_ids):
    ctas = [len(b) // scratch for b in buffers]
    return (batch_sums(ArrayOps, buffers, ctas, scratch, units, scope_ids),
            batch_sums(TorchOps(DEVICE), on_device(buffers), ctas, scratch, units, scope_ids))


def assert_same(buffers, scratch, units, scope_ids):
    want, got = both(buffers, scratch, units, scope_ids)
    assert isinstance(want, BatchSums) and isinstance(got, BatchSums), (want, got)
    np.testing.assert_array_equal(got.cycles, want.cycles)
    np.testing.assert_array_equal(got.intervals, want.intervals)
    np.testing.assert_allclose(got.ns, want.ns, rtol=1e-12)
    return got


@pytest.mark.parametrize("name", ["load_store", "nested"])
def test_the_real_buffers_sum_as_numpy_does(name):
    assert_same(*recorded_batch(name))


def test_a_clock_wrap_an_empty_warp_and_a_ctas_zero_span():
    wrap = 1 << 43
    warps = [[(S, 0, 10), (S, 1, 12), (E, 1, 30), (E, 0, 40), (S, 0, 50), (E, 0, 65)],
             [(S, 1, wrap - 5), (E, 1, 20)],
             [],
             [(S, 0, 100), (E, 0, 100)]]
    raw, scratch = launch([slot(warps, program_id=0, init_ns=1_000, pre_final_ns=1_500),
                           slot(warps, program_id=1, init_ns=2_000, pre_final_ns=2_000)])
    got = assert_same([raw], scratch, 4, [0, 1])
    assert got.launch(0).cycles == [2 * (30 + 15 + 0), 2 * (18 + 25)]


def random_warp(rng: random.Random, scopes: int, pairs: int) -> list:
    """`pairs` intervals of random scopes, nested or one after another, with rising cycles."""
    events, open_, cycle = [], [], rng.randrange(1 << 40)
    while pairs or open_:
        cycle += rng.randrange(1, 50)
        if pairs and (not open_ or rng.random() < 0.5) and len(open_) < scopes:
            scope = rng.choice([s for s in range(scopes) if s not in open_])
            open_.append(scope)
            events.append((S, scope, cycle))
            pairs -= 1
        else:
            events.append((E, open_.pop(), cycle))
    return events


@pytest.mark.parametrize("seed", range(4))
def test_random_nestings_over_more_ctas_than_one_program_reads_sum_as_numpy_does(seed):
    rng = random.Random(seed)
    units, scopes, longest = rng.choice([1, 2, 4]), rng.choice([1, 2, 3]), rng.randrange(2, 40)
    buffers = []
    for grid in (rng.randrange(1, 5), BLOCK + 3, rng.randrange(1, 5)):  # the second spans two programs
        slots = [slot([random_warp(rng, scopes, rng.randrange(0, longest // 2)) for _ in range(units)],
                      program_id=p, init_ns=1_000 * p, pre_final_ns=1_000 * p + rng.randrange(0, 5_000),
                      seg_entries=longest)
                 for p in range(grid)]
        buffers.append(launch(slots))
    scratch = max(s for _, s in buffers)
    raws = [np.concatenate([raw.reshape(-1, s), np.zeros((len(raw) // s, scratch - s), np.uint8)], 1).reshape(-1)
            for raw, s in buffers]
    assert_same(raws, scratch, units, list(range(scopes)))


@pytest.mark.parametrize("warp, why", [
    ([(S, 0, 1), (S, 0, 2), (E, 0, 9)], HostReason.UNPAIRED),
    ([(E, 0, 3), (S, 0, 4), (E, 0, 9)], HostReason.UNPAIRED),
    ([(S, 0, 1), (E, 0, 2), (S, 0, 3)], HostReason.UNPAIRED),
    ([(S, 7, 1), (E, 7, 2)], HostReason.UNKNOWN_SCOPE),
])
def test_a_batch_with_anything_to_report_is_refused_for_the_same_reason(warp, why):
    raw, scratch = launch([slot([[(S, 0, 1), (E, 0, 5)], warp], seg_entries=8)])
    assert both([raw], scratch, 2, [0]) == (why, why)


def test_the_warm_up_batch_sums_through_the_kernel():
    assert isinstance(warm_up(TorchOps(DEVICE), lambda array: torch.from_numpy(array).to(DEVICE)), BatchSums)


def test_a_wrapped_warp_a_torn_count_and_a_bad_preamble_are_refused_as_numpy_refuses_them():
    wrapped, scratch = launch([slot([[(S, 0, 1), (E, 0, 5)], [(S, 0, 1), (E, 0, 2)] * 5], seg_entries=8)])
    torn, _ = launch([slot([[(S, 0, 1), (E, 0, 5)], [(S, 0, 1), (E, 0, 5)]], seg_entries=8)])
    torn[HEADER_BYTES:HEADER_BYTES + 4].view("<u4")[0] = 3  # the first warp's count: three words
    bad, _ = launch([slot([[(S, 0, 1), (E, 0, 5)]] * 2, seg_entries=8, preamble=0x12345678)])
    for raw, why in ((wrapped, HostReason.WRAPPED), (torn, HostReason.TORN), (bad, HostReason.BAD_SLOT)):
        assert both([raw], scratch, 2, [0]) == (why, why)


def test_slots_of_76_bytes_sum_as_numpy_does():
    warp = [(S, 0, 100), (S, 1, 120), (E, 1, 180), (E, 0, 200)]
    raw = np.frombuffer(b"".join(slot([warp], program_id=p, seg_entries=4, init_ns=1_000 * p)
                                 for p in range(3)), np.uint8).copy()
    assert_same([raw, raw.copy()], 76, 1, [0, 1])


def test_launches_in_separate_allocations_and_out_of_address_order_sum_as_numpy_does():
    rng = random.Random(7)
    raws = [launch([slot([random_warp(rng, 2, 3) for _ in range(2)], program_id=p, seg_entries=8)
                    for p in range(n)]) for n in (3, 1, 2)]
    scratch = raws[0][1]
    buffers = [raw for raw, _ in raws]
    ctas = [len(b) // scratch for b in buffers]
    want = batch_sums(ArrayOps, buffers, ctas, scratch, 2, [0, 1])
    separate = [torch.from_numpy(b.copy()).to(DEVICE) for b in buffers[::-1]][::-1]  # allocated last to first
    got = batch_sums(TorchOps(DEVICE), separate, ctas, scratch, 2, [0, 1])
    np.testing.assert_array_equal(got.cycles, want.cycles)
    np.testing.assert_allclose(got.ns, want.ns, rtol=1e-12)


@pytest.mark.parametrize("warp, scopes", [
    ([(S, 0, 10), (E, 0, 30)], [0]),
    ([(S, 0, 5), (S, 1, 10), (E, 1, 30), (S, 2, 40), (E, 2, 70), (E, 0, 80)], [0, 1, 2]),
])
def test_a_piece_copies_to_the_host_once_whatever_its_scopes(warp, scopes, monkeypatch):
    raw, scratch = launch([slot([warp] * 2, program_id=p) for p in range(3)])
    copies = []
    cpu = torch.Tensor.cpu
    monkeypatch.setattr(torch.Tensor, "cpu", lambda self, *a, **k: copies.append(self.shape) or cpu(self, *a, **k))
    assert isinstance(batch_sums(TorchOps(DEVICE), on_device([raw, raw.copy()]), [3, 3], scratch, 2, scopes), BatchSums)
    assert len(copies) == 1
