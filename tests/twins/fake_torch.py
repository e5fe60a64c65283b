"""A stand-in for torch's CUDA tensors, kept on the host in numpy, for the CPU tests of tensor metrics.

Every operation on a "cuda" tensor is a kernel: it runs at once, or, while the calling thread
captures a graph (`cuda.graph(g)`), it is kept in `g` and runs at each `g.replay()`. Each kernel is
told to `cuda.listener` (the fake backend) on the launching thread: `launched(name, node)`, with
node None for an eager kernel and the new graph node's id during a capture; `g.replay()` tells it
`replayed(nodes)` before running them. Memory from `empty` holds garbage, as the device's does.

What would make a host wait for the device, reading a device tensor (`item`, `tolist`, `cpu`,
`numpy`, `float`, `bool`) or `cuda.synchronize`, is logged in `cuda.host_waits` with what did it,
so a test can check that nothing on the launch path waits.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import traceback
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class dtype:
    name: str
    np: type
    is_floating_point: bool

    def __repr__(self) -> str:
        return f"faketorch.{self.name}"


float64 = dtype("float64", np.float64, True)
float32 = dtype("float32", np.float32, True)
int64 = dtype("int64", np.int64, False)
int32 = dtype("int32", np.int32, False)
bool_ = dtype("bool", np.bool_, False)
_DTYPES = {d.np: d for d in (float64, float32, int64, int32, bool_)}


@dataclass(frozen=True)
class device:
    type: str
    index: int | None = None

    @classmethod
    def of(cls, spec) -> device:
        if isinstance(spec, device):
            return spec
        kind, _, index = str(spec).partition(":")
        return cls(kind, int(index) if index else (0 if kind == "cuda" else None))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


class Tensor:
    def __init__(self, array: np.ndarray, dev: device) -> None:
        self._a = array
        self.device = dev

    # -- metadata: no kernel, no wait ----------------------------------------------------------------
    @property
    def dtype(self) -> dtype:
        return _DTYPES[self._a.dtype.type]

    @property
    def shape(self) -> tuple:
        return self._a.shape

    def data_ptr(self) -> int:
        return self._a.__array_interface__["data"][0]

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def numel(self) -> int:
        return int(self._a.size)

    def element_size(self) -> int:
        return self._a.itemsize

    def detach(self) -> Tensor:
        return self

    def reshape(self, *shape) -> Tensor:
        return Tensor(self._a.reshape(*shape), self.device)

    view = reshape

    def __getitem__(self, key) -> Tensor:
        return Tensor(self._a[key], self.device)

    # -- kernels ---------------------------------------------------------------------------------------
    def _kernel(self, name: str, fn) -> None:
        if self.device.type == "cpu":
            fn()
        else:
            cuda.launch(name, fn)

    def _new(self, shape, dt: dtype) -> Tensor:
        return Tensor(_garbage(shape, dt), self.device)

    def to(self, dt: dtype) -> Tensor:
        if dt == self.dtype:
            return self
        out = self._new(self._a.shape, dt)
        self._kernel("copy_kernel", lambda: np.copyto(out._a, self._a, casting="unsafe"))
        return out

    def double(self) -> Tensor:
        return self.to(float64)

    def long(self) -> Tensor:
        return self.to(int64)

    def copy_(self, src: Tensor) -> Tensor:
        self._kernel("copy_kernel", lambda: np.copyto(self._a, np.broadcast_to(src._a, self._a.shape),
                                                     casting="unsafe"))
        return self

    def add_(self, other) -> Tensor:
        if isinstance(other, Tensor) and other.is_floating_point() and not self.is_floating_point():
            raise RuntimeError("result type Float can't be cast to the desired output type Long")
        value = other._a if isinstance(other, Tensor) else other
        self._kernel("add_kernel", lambda: np.add(self._a, value, out=self._a, casting="unsafe"))
        return self

    def remainder_(self, k: int) -> Tensor:
        self._kernel("remainder_kernel", lambda: np.remainder(self._a, k, out=self._a))
        return self

    def index_copy_(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        assert dim == 0 and src.dtype == self.dtype, "index_copy_(): same dtype, along dim 0"

        def run():
            rows = index._a.astype(np.int64)
            assert ((rows >= 0) & (rows < self._a.shape[0])).all(), "device-side assert: index out of bounds"
            self._a[rows] = src._a

        self._kernel("index_copy_kernel", run)
        return self

    def zero_(self) -> Tensor:
        self._kernel("fill_kernel", lambda: self._a.fill(0))
        return self

    def fill_(self, value) -> Tensor:
        self._kernel("fill_kernel", lambda: self._a.fill(value))
        return self

    def sum(self) -> Tensor:
        out = self._new((), self.dtype if self.is_floating_point() else int64)
        self._kernel("reduce_kernel", lambda: np.copyto(out._a, self._a.sum(), casting="unsafe"))
        return out

    def __mul__(self, k) -> Tensor:
        out = self._new(self._a.shape, self.dtype)
        self._kernel("mul_kernel", lambda: np.multiply(self._a, k, out=out._a, casting="unsafe"))
        return out

    # -- reads on the host: a wait for the device ------------------------------------------------------
    def _read(self, how: str) -> np.ndarray:
        if self.device.type != "cpu":
            cuda.waited(how)
        return self._a

    def item(self):
        return self._read("item").item()

    def tolist(self):
        return self._read("tolist").tolist()

    def numpy(self):
        return self._read("numpy").copy()

    def cpu(self) -> Tensor:
        return Tensor(self._read("cpu").copy(), device("cpu"))

    def __float__(self) -> float:
        return float(self._read("float"))

    def __bool__(self) -> bool:
        return bool(self._read("bool"))

    def __repr__(self) -> str:
        return f"faketorch.Tensor({self._a!r}, device={self.device})"


def _garbage(shape, dt: dtype) -> np.ndarray:
    """What fresh device memory holds: anything (here, numbers no test expects)."""
    return np.full(shape, -7777 if not dt.is_floating_point else 1e30, dtype=dt.np)


class CUDAGraph:
    def __init__(self) -> None:
        self.nodes: list[tuple[int, str, object]] = []

    def replay(self) -> None:
        if cuda.listener is not None:
            cuda.listener.replayed([(node, name) for node, name, _ in self.nodes])
        for _, _, fn in self.nodes:
            fn()


class _Cuda:
    def __init__(self) -> None:
        self.listener = None
        self.host_waits: list[tuple[str, str]] = []  # (what, the stack that did it)
        self._local = threading.local()
        self._nodes = itertools.count(1000)

    def is_initialized(self) -> bool:
        return True

    def is_current_stream_capturing(self) -> bool:
        return getattr(self._local, "graph", None) is not None

    def synchronize(self, dev=None) -> None:
        self.waited("synchronize")

    def waited(self, how: str) -> None:
        self.host_waits.append((how, "".join(traceback.format_stack(limit=12))))

    @contextlib.contextmanager
    def graph(self, g: CUDAGraph):
        self._local.graph = g
        try:
            yield g
        finally:
            self._local.graph = None

    def launch(self, name: str, fn) -> None:
        g = getattr(self._local, "graph", None)
        if g is None:
            fn()
            if self.listener is not None:
                self.listener.launched(name, None)
            return
        node = next(self._nodes)
        g.nodes.append((node, name, fn))
        if self.listener is not None:
            self.listener.launched(name, node)


cuda = _Cuda()


def empty(n, dtype: dtype = float32, device="cuda") -> Tensor:
    return Tensor(_garbage(n, dtype), globals()["device"].of(device))


def tensor(values, dtype: dtype | None = None, device="cuda") -> Tensor:
    """A tensor holding `values`, made by a kernel on a device (as torch copies them there)."""
    host = np.asarray(values, dtype=None if dtype is None else dtype.np)
    if dtype is None and host.dtype == np.float64:
        host = host.astype(np.float32)  # torch's default float
    out = Tensor(_garbage(host.shape, _DTYPES[host.dtype.type]), globals()["device"].of(device))
    out._kernel("copy_kernel", lambda: np.copyto(out._a, host))
    return out
