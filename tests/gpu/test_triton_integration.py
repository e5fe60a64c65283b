"""Issue 6 on a real GPU: Triton launch metadata and kernel properties, the python context, NVTX
ranges and states, with Triton and torch kernels (each scenario in a fresh process)."""
from __future__ import annotations

import re

import pytest
from test_cupti import kernels_under, run, tree

pytestmark = pytest.mark.gpu

META = """
def meta(grid, kernel, args):
    return {"name": f"add_{args['n']}", "flops32": float(args["n"]), "bytes": 12 * args["n"], "extra": 7}

@triton.jit(launch_metadata=meta)
def add_meta(x, y, z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

x, y, z = tensors()
"""


def test_launch_metadata_names_the_kernel_and_gives_its_metrics_and_properties(tmp_path):
    run(tmp_path, META, """
        proton.start("prof", hook="triton")
        from triton import knobs  # Lepton is the only hook: it calls launch_metadata itself
        assert knobs.runtime.launch_enter_hook.args == (True,), knobs.runtime.launch_enter_hook
        with proton.scope("hooked"):
            for _ in range(3):
                add_meta[(4,)](x, y, z, x.numel(), BLOCK=1024)
            z.mul_(2)
        proton.finalize()
        result()
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    node = flat[("hooked", "add_4096")]
    assert node["count"] == 3 and node["time (ns)"] > 0
    assert node["flops32"] == 3 * 4096.0 and node["bytes"] == 3 * 12 * 4096 and node["extra"] == 21
    assert node["num_warps"] == 4 and node["registers"] > 0 and node["occupancy"] > 0
    assert "num_stages" in node and "shared_bytes" in node and "spills" in node
    torch_kernels = kernels_under(flat, ("hooked",))
    assert sum(c for n, c in torch_kernels.items() if n != "add_4096") == 1


def test_many_threads_launching_keep_their_own_metadata(tmp_path):
    run(tmp_path, META, """
        def work(i):
            a, b, c = tensors()
            n = 1024 * (i + 1)
            with proton.scope(f"t{i}"):
                for _ in range(20):
                    add_meta[(4,)](a, b, c, n, BLOCK=1024)
        proton.start("prof", hook="triton")
        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        proton.finalize()
        result()
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    for i in range(4):
        n = 1024 * (i + 1)
        node = flat[(f"t{i}", f"add_{n}")]
        assert node["count"] == 20 and node["flops32"] == 20.0 * n and node["bytes"] == 20 * 12 * n


def test_kernels_launched_by_launch_metadata_stay_out_of_the_users_tree(tmp_path):
    run(tmp_path, """
        def meta(grid, kernel, args):
            total = float(args["x"].sum().item())  # launches a reduction kernel and syncs
            return {"name": "owner", "checksum": total}

        @triton.jit(launch_metadata=meta)
        def owner_kernel(x, y, z, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(z + offs, tl.load(x + offs) + tl.load(y + offs))

        x, y, z = tensors()
        proton.start("prof", hook="triton")
        with proton.scope("s"):
            for _ in range(3):  # the second and third launches take the hook's fast path
                owner_kernel[(4,)](x, y, z, x.numel(), BLOCK=1024)
        proton.finalize()
        result()
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    assert flat[("s", "owner")]["count"] == 3
    helpers = kernels_under(flat, ("s", "__proton_launch_metadata"))  # directly under it, as in Proton
    assert helpers and all(n != "owner" for n in helpers)
    assert set(kernels_under(flat, ("s",))) == {"owner"}


def test_python_context_puts_triton_and_torch_kernels_under_the_launching_lines(tmp_path):
    run(tmp_path, """
        x, y, z = tensors()
        proton.start("prof", context="python")

        def inner():
            add(x, y, z)
            z.mul_(2)

        inner()
        proton.finalize()
        result()
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    frame = re.compile(r".+:\d+@.+")
    kernels = {k: m for k, m in flat.items() if "count" in m}
    assert sum(m["count"] for m in kernels.values()) == 2
    for path in kernels:
        assert all(frame.fullmatch(p) for p in path[:-1]), path
        assert not any("/triton/" in p or "/torch/" in p for p in path[:-1]), path
    parents = sorted(path[-2].rsplit("@", 1)[1] for path in kernels)
    assert parents == ["add", "inner"]  # add_kernel under add(), the torch mul under inner()


def test_nvtx_ranges_become_scopes_and_can_be_turned_off(tmp_path):
    body = """
        x, y, z = tensors()
        proton.start("prof")
        with proton.scope("proton_scope"):
            torch.cuda.nvtx.range_push("nvtx_range0")
            torch.cuda.nvtx.range_push("nvtx_range1")
            add(x, y, z)
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_pop()
        proton.finalize()
        result()
    """
    run(tmp_path, body)
    flat, _ = tree(tmp_path / "prof.hatchet")
    assert flat[("proton_scope", "nvtx_range0", "nvtx_range1", "add_kernel")]["count"] == 1
    run(tmp_path, "import os\nos.environ['LEPTON_ENABLE_NVTX'] = '0'\n", body)
    flat, _ = tree(tmp_path / "prof.hatchet")
    assert flat[("proton_scope", "add_kernel")]["count"] == 1


def test_states_are_appended_below_scopes(tmp_path):
    run(tmp_path, """
        x, y, z = tensors()
        proton.start("prof")
        with proton.state("st"):
            with proton.scope("s1", {"a": 1.0}):
                add(x, y, z)
        proton.finalize()
        result()
    """)
    flat, _ = tree(tmp_path / "prof.hatchet")
    assert flat[("s1", "st")]["a"] == 1.0
    assert flat[("s1", "st", "add_kernel")]["count"] == 1
