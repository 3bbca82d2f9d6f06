"""ccs: run ccsynth's synthesized collective schedules from Python.

A thin ctypes binding of libccs (runtime/ccs.h).  Load a plan (one .ccs
file) or a plan set (a ``ccsynth tune --emit DIR`` directory: one plan per
buffer-size range), make a communicator, and call a collective on numpy
arrays or torch tensors::

    import ccs
    plans = ccs.PlanSet.load("tuned/")          # or ccs.Plan.load("x.ccs")
    comm = ccs.Comm.from_mpi()                  # one process per rank
    ccs.allreduce(plans, comm, grad, op="avg")  # in place

CPU arrays and tensors run on the threads or MPI transport and the call
returns when this rank's part is done; CUDA tensors need a communicator
from :meth:`Comm.from_torch` (NCCL transport) and are enqueued on the
current CUDA stream.  Every failure raises :class:`Error` carrying the
library's status name and message.  ``ccs.torch`` has the DDP comm hook.
See docs/python.md.
"""
from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import sys
import weakref
from typing import Any, List, Optional, Tuple, Union

from . import _lib as L

__all__ = ["Error", "Plan", "PlanSet", "Comm", "allreduce", "reducescatter",
           "allgather", "reduce", "broadcast", "alltoall", "library_version"]
__version__ = "0.1.0"


class Error(RuntimeError):
    """A libccs failure, or a call the binding refuses before reaching it.

    ``status`` is the ccs_status_t value (negative), ``name`` its symbolic
    name ("CCS_ERR_MISMATCH"), ``message`` the detailed message.
    """

    def __init__(self, status: int, message: str):
        self.status = int(status)
        try:
            self.name = L.lib().ccs_status_name(self.status).decode()
        except OSError:
            self.name = f"status {self.status}"
        self.message = message
        super().__init__(f"{self.name}: {message}")


def _check(st: int, msg: Union[str, bytes, None] = None) -> None:
    if st != 0:
        if isinstance(msg, bytes):
            msg = msg.decode(errors="replace")
        if not msg:
            msg = L.lib().ccs_strerror(st).decode()
        raise Error(st, msg)


def library_version() -> int:
    """libccs's CCS_VERSION_CODE (major * 10000 + minor * 100 + patch)."""
    return L.lib().ccs_version()


def _coll_code(name: str) -> int:
    return L.COLLS.index(name)


# ------------------------------------------------------------ handles --

class _Handle:
    """A libccs handle in self._h (None once closed): freed by close(),
    which subclasses define, also when the object is collected."""

    _h: Optional[int]
    _what = "object"            # for the "... is closed" error

    def close(self) -> None:
        raise NotImplementedError

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _handle(self) -> int:
        if self._h is None:
            raise Error(L.ERR_INVALID, f"{self._what} is closed")
        return self._h


# ---------------------------------------------------------------- plans --

class Plan(_Handle):
    """One validated schedule (a .ccs file).  Immutable; share freely."""

    _what = "plan"

    def __init__(self, handle: int, owner: Any = None):
        # owner: the PlanSet a borrowed plan belongs to (kept alive), or
        # None when this object owns the handle.
        self._h: Optional[int] = handle
        self._owner = owner
        info = L.PlanInfo()
        _check(L.lib().ccs_plan_get_info(handle, ctypes.byref(info)))
        self.coll: str = L.COLLS[info.coll]
        self.nranks: int = info.nranks
        self.nchunks: int = info.nchunks
        self.nsteps: int = info.nsteps
        self.nphases: int = info.nphases
        self.root: int = info.root
        self.straggler: int = info.straggler
        self.topo_fingerprint: int = info.topo_fingerprint
        self.algo: str = info.algo.decode()

    @classmethod
    def load(cls, path: str) -> "Plan":
        """Read and validate a .ccs file."""
        h = ctypes.c_void_p()
        msg = ctypes.create_string_buffer(L.MSG_LEN)
        _check(L.lib().ccs_plan_load_file_msg(str(path).encode(),
                                              ctypes.byref(h), msg, L.MSG_LEN),
               msg.value)
        return cls(h.value)

    def close(self) -> None:
        """Free the plan now (it is also freed when collected)."""
        if self._h is not None and self._owner is None:
            L.lib().ccs_plan_destroy(self._h)
        self._h = None

    def __repr__(self) -> str:
        s = f", straggler {self.straggler}" if self.straggler >= 0 else ""
        return (f"<ccs.Plan {self.algo} {self.coll}, {self.nranks} ranks, "
                f"{self.nchunks} chunks, {self.nsteps} steps{s}>")


class PlanSet(_Handle):
    """Plans per buffer-size range, picked per call by the call's bytes.

    Loaded from a ``ccsynth tune --emit DIR`` directory (its tuning.json),
    that tuning.json itself, or a single .ccs (a set of one plan).  A buffer
    of s bytes uses the last range whose start is <= s; sizes beyond the
    tuned span use the nearest end's plan (docs/runtime.md).
    """

    _what = "plan set"

    def __init__(self, handle: int):
        self._h: Optional[int] = handle
        info = L.PlanSetInfo()
        _check(L.lib().ccs_planset_get_info(handle, ctypes.byref(info)))
        self.coll: str = L.COLLS[info.coll]
        self.nranks: int = info.nranks
        self.topo_fingerprint: int = info.topo_fingerprint
        self.elem_bytes: int = info.elem_bytes
        self.plans: List[Plan] = [
            Plan(L.lib().ccs_planset_plan(handle, i), owner=self)
            for i in range(info.nplans)]
        self.ranges: List[Tuple[int, Optional[int], int]] = []
        lo, hi, pi = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint32()
        for k in range(info.nranges):
            _check(L.lib().ccs_planset_range(handle, k, ctypes.byref(lo),
                                             ctypes.byref(hi),
                                             ctypes.byref(pi)))
            self.ranges.append((lo.value, None if hi.value == 2**64 - 1
                                else hi.value, pi.value))

    @classmethod
    def load(cls, path: str) -> "PlanSet":
        """Load a tune directory, its tuning.json, or one .ccs file."""
        h = ctypes.c_void_p()
        msg = ctypes.create_string_buffer(L.MSG_LEN)
        _check(L.lib().ccs_planset_load(str(path).encode(), ctypes.byref(h),
                                        msg, L.MSG_LEN), msg.value)
        return cls(h.value)

    def pick(self, nbytes: int) -> Plan:
        """The plan a buffer of ``nbytes`` (the whole buffer) runs."""
        i = ctypes.c_uint32()
        _check(L.lib().ccs_planset_pick(self._handle(), nbytes,
                                        ctypes.byref(i)))
        return self.plans[i.value]

    def close(self) -> None:
        if self._h is not None:
            for p in self.plans:
                p._h = None
            L.lib().ccs_planset_destroy(self._h)
        self._h = None

    def __repr__(self) -> str:
        return (f"<ccs.PlanSet {self.coll}, {self.nranks} ranks, "
                f"{len(self.plans)} plans over {len(self.ranges)} ranges>")


# -------------------------------------------------------- communicators --

_mpi_comms: "weakref.WeakSet[Comm]" = weakref.WeakSet()
_mpi_we_initialized = False
_mpi_exit_registered = False


def _mpi_finalize_at_exit() -> None:
    # Our communicators duplicate an MPI communicator: free them before
    # MPI_Finalize, which we call only when we called MPI_Init.
    for c in list(_mpi_comms):
        c.close()
    if _mpi_we_initialized:
        mpi = ctypes.CDLL(ctypes.util.find_library("mpi"))
        fin = ctypes.c_int(0)
        mpi.MPI_Finalized(ctypes.byref(fin))
        if not fin.value:
            mpi.MPI_Finalize()


def _mpi_register_exit() -> None:
    # atexit runs handlers last-in first-out: registered after MPI was
    # initialised (by mpi4py's import or by us), ours runs before any
    # MPI_Finalize that mpi4py registered.
    global _mpi_exit_registered
    if not _mpi_exit_registered:
        atexit.register(_mpi_finalize_at_exit)
        _mpi_exit_registered = True


def _mpi_ensure_init() -> None:
    global _mpi_we_initialized
    if "mpi4py.MPI" in sys.modules:
        return                  # mpi4py initialised MPI and finalises it
    name = ctypes.util.find_library("mpi")
    if not name:
        raise Error(L.ERR_MPI, "no MPI library (libmpi) found")
    mpi = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    flag = ctypes.c_int(0)
    mpi.MPI_Initialized(ctypes.byref(flag))
    if not flag.value:
        if mpi.MPI_Init(None, None) != 0:
            raise Error(L.ERR_MPI, "MPI_Init failed")
        _mpi_we_initialized = True
        _mpi_register_exit()


class Comm(_Handle):
    """One rank's communicator on a transport ("threads", "mpi", "nccl").

    Used by one thread at a time.  ``close()`` (or collection) frees it;
    MPI communicators are closed before MPI_Finalize at exit.
    """

    _what = "communicator"

    def __init__(self, handle: int, nccl: Optional[Tuple[Any, int]] = None):
        self._h: Optional[int] = handle
        self._nccl = nccl       # (libnccl, ncclComm_t) we own, or None
        h = L.lib()
        self.rank: int = h.ccs_comm_rank(handle)
        self.size: int = h.ccs_comm_size(handle)
        self.transport: str = h.ccs_comm_transport(handle).decode()

    @staticmethod
    def threads(nranks: int) -> List["Comm"]:
        """``nranks`` communicators of one in-process world: give comm r to
        thread r (ctypes drops the GIL during each call)."""
        arr = (ctypes.c_void_p * max(1, nranks))()
        _check(L.lib().ccs_comm_init_threads(nranks, arr),
               f"threads transport: cannot make {nranks} ranks")
        return [Comm(arr[r]) for r in range(nranks)]

    @staticmethod
    def from_mpi(comm: Any = None) -> "Comm":
        """MPI transport over MPI_COMM_WORLD (comm None; MPI is initialised
        if nobody did) or over an mpi4py communicator.  Collective."""
        h = ctypes.c_void_p()
        if comm is None:
            _mpi_ensure_init()
            st = L.lib().ccs_comm_init_mpi_world(ctypes.byref(h))
        else:
            try:
                from mpi4py import MPI  # type: ignore
            except ImportError as e:
                raise Error(L.ERR_INVALID, "Comm.from_mpi(comm): comm must "
                            "be an mpi4py communicator, and mpi4py is not "
                            "installed") from e
            if not isinstance(comm, MPI.Comm):
                raise Error(L.ERR_INVALID, f"Comm.from_mpi: {type(comm)} is "
                            "not an mpi4py communicator")
            st = L.lib().ccs_comm_init_mpi(MPI._addressof(comm),
                                           ctypes.byref(h))
        _check(st, "mpi transport: cannot create the communicator (is MPI "
               "initialised? run with CCS_DEBUG=WARN for details)")
        c = Comm(h.value)
        _mpi_comms.add(c)
        _mpi_register_exit()
        return c

    @staticmethod
    def from_torch(group: Any = None) -> "Comm":
        """NCCL transport for the ranks of a torch.distributed process group
        (default: the world), one GPU per process (the current CUDA device).
        The NCCL unique id is broadcast through ``group`` (any backend), so
        it works under torchrun.  Collective over the group."""
        import torch
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            raise Error(L.ERR_INVALID, "Comm.from_torch: torch.distributed "
                        "is not initialised; call init_process_group first")
        if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
            raise Error(L.ERR_NO_DEVICE, "Comm.from_torch: no CUDA device "
                        "(the NCCL transport needs one GPU per rank; CPU "
                        "tensors: use Comm.from_mpi)")
        L.lib()                 # loads libnccl too when libccs has CUDA
        name = ctypes.util.find_library("nccl") or "libnccl.so.2"
        try:
            nccl = ctypes.CDLL(name)
        except OSError as e:
            raise Error(L.ERR_UNSUPPORTED, f"Comm.from_torch: cannot load "
                        f"NCCL ({name}): {e}") from e
        rank = dist.get_rank(group)
        size = dist.get_world_size(group)
        uid = (ctypes.c_char * 128)()
        if rank == 0 and nccl.ncclGetUniqueId(uid) != 0:
            raise Error(L.ERR_NCCL, "ncclGetUniqueId failed")
        # A sum in which only group rank 0 is not zero is a broadcast that
        # needs no global rank of the source (which torch 1.x and 2.x name
        # differently).
        dev = torch.device("cuda", torch.cuda.current_device())
        backend = dist.get_backend(group)
        t = torch.tensor(list(bytearray(uid.raw)), dtype=torch.int32,
                         device=dev if backend == "nccl" else "cpu")
        dist.all_reduce(t, group=group)
        uid = (ctypes.c_char * 128)(*bytes(t.cpu().to(torch.uint8).tolist()))

        class _Uid(ctypes.Structure):
            _fields_ = [("internal", ctypes.c_char * 128)]

        u = _Uid()
        ctypes.memmove(ctypes.addressof(u), uid, 128)
        nc = ctypes.c_void_p()
        nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                          ctypes.c_int, _Uid, ctypes.c_int]
        torch.cuda.set_device(dev)
        r = nccl.ncclCommInitRank(ctypes.byref(nc), size, u, rank)
        if r != 0:
            raise Error(L.ERR_NCCL, f"ncclCommInitRank failed ({r})")
        h = ctypes.c_void_p()
        msg = ctypes.create_string_buffer(L.MSG_LEN)
        st = L.lib().ccs_comm_init_nccl_msg(nc, ctypes.byref(h), msg,
                                            L.MSG_LEN)
        if st != 0:
            nccl.ncclCommDestroy(nc)
            _check(st, msg.value)
        return Comm(h.value, nccl=(nccl, nc.value))

    def last_error(self) -> str:
        """Message of the last failed call on this communicator."""
        return L.lib().ccs_comm_last_error(self._handle()).decode()

    def close(self) -> None:
        if self._h is not None:
            L.lib().ccs_comm_destroy(self._h)
            if self._nccl is not None:
                self._nccl[0].ncclCommDestroy(ctypes.c_void_p(self._nccl[1]))
        self._h = None
        self._nccl = None

    def __repr__(self) -> str:
        return f"<ccs.Comm {self.transport} rank {self.rank}/{self.size}>"


# --------------------------------------------------------------- buffers --

_NP_CODES: Optional[dict] = None


def _np_codes() -> dict:
    global _NP_CODES
    if _NP_CODES is None:
        import numpy
        _NP_CODES = {numpy.dtype(n): i for i, n in enumerate(L.DTYPES)
                     if n != "bfloat16"}
    return _NP_CODES


class _Buf:
    """What a call needs of an array or tensor: pointer, elements, dtype."""
    __slots__ = ("obj", "ptr", "n", "dtype", "cuda", "device", "writable")

    def __init__(self, obj: Any, what: str, writable: bool):
        self.obj = obj
        mod = type(obj).__module__
        if mod.startswith("torch"):
            if not obj.is_contiguous():
                raise Error(L.ERR_INVALID, f"{what}: tensor is not "
                            "contiguous (call .contiguous())")
            name = str(obj.dtype).replace("torch.", "")
            self.ptr = obj.data_ptr()
            self.n = obj.numel()
            self.cuda = obj.is_cuda
            self.device = obj.device
            self.writable = True
        elif mod.startswith("numpy"):
            if not obj.flags.c_contiguous:
                raise Error(L.ERR_INVALID, f"{what}: array is not contiguous "
                            "(use numpy.ascontiguousarray)")
            if writable and not obj.flags.writeable:
                raise Error(L.ERR_INVALID, f"{what}: array is read-only")
            # dtype.name costs ~1.6 us a call; a dict of dtypes ~30 ns
            code = _np_codes().get(obj.dtype)
            name = obj.dtype.name if code is None else L.DTYPES[code]
            self.ptr = obj.ctypes.data
            self.n = obj.size
            self.cuda = False
            self.device = None
            self.writable = bool(obj.flags.writeable)
        else:
            raise Error(L.ERR_INVALID, f"{what}: {type(obj).__name__} is "
                        "neither a numpy array nor a torch tensor")
        try:
            self.dtype = L.DTYPES.index(name)
        except ValueError:
            raise Error(L.ERR_INVALID, f"{what}: dtype {name} is not one "
                        f"libccs has ({', '.join(L.DTYPES)})") from None

    def new(self, n: int) -> Any:
        """An empty array/tensor like this one, with n elements."""
        if type(self.obj).__module__.startswith("torch"):
            import torch
            return torch.empty(n, dtype=self.obj.dtype, device=self.obj.device)
        import numpy
        return numpy.empty(n, dtype=self.obj.dtype)


PlansLike = Union[Plan, PlanSet]


def _run(coll: str, plans: PlansLike, comm: Comm, src: _Buf, out: Any,
         count: int, out_n: int, op: str, straggler: Union[int, str, None],
         topo_fingerprint: Optional[int],
         plain: Optional["Plan"] = None) -> Any:
    if comm is None or not isinstance(comm, Comm):
        raise Error(L.ERR_INVALID, f"{coll}: no communicator (make one with "
                    "ccs.Comm.from_mpi / threads / from_torch first)")
    ch = comm._handle()
    try:
        opc = L.OPS.index(op)
    except ValueError:
        raise Error(L.ERR_INVALID, f"{coll}: unknown op {op!r} (one of "
                    f"{', '.join(L.OPS)})") from None
    if out is None:
        out = src.obj if out_n == src.n else src.new(out_n)
    dst = src if out is src.obj else _Buf(out, f"{coll} output", True)
    if not dst.writable:
        raise Error(L.ERR_INVALID, f"{coll}: output array is read-only")
    if dst.dtype != src.dtype:
        raise Error(L.ERR_INVALID, f"{coll}: input is {L.DTYPES[src.dtype]}, "
                    f"output {L.DTYPES[dst.dtype]}")
    if dst.n != out_n:
        raise Error(L.ERR_INVALID, f"{coll}: output has {dst.n} elements, "
                    f"needs {out_n}")
    if src.cuda != dst.cuda:
        raise Error(L.ERR_INVALID, f"{coll}: input and output on different "
                    "devices")
    stream = None
    if src.cuda:
        if comm.transport not in ("nccl", "cuda"):
            raise Error(L.ERR_INVALID, f"{coll}: CUDA tensor on the "
                        f"{comm.transport} transport (use Comm.from_torch)")
        import torch
        stream = torch.cuda.current_stream(src.device).cuda_stream
    elif comm.transport in ("nccl", "cuda"):
        raise Error(L.ERR_INVALID, f"{coll}: CPU buffer on the "
                    f"{comm.transport} transport (move it to the GPU)")
    if straggler == "auto":
        # The library finds the straggler per call (ccs.h,
        # CCS_STRAGGLER_AUTO); `plain` runs when nobody is late enough.
        straggler = L.STRAGGLER_AUTO
    elif isinstance(straggler, str):
        raise Error(L.ERR_INVALID, f"{coll}: straggler {straggler!r}: want "
                    "a rank, None or 'auto'")
    if plain is not None and not isinstance(plain, Plan):
        raise Error(L.ERR_INVALID, f"{coll}: plain must be a ccs.Plan")
    ph = plain._handle() if plain is not None else None
    lib = L.lib()
    if isinstance(plans, PlanSet):
        o = L.PlanSetOpts(-1 if straggler is None else straggler,
                          _coll_code(coll), topo_fingerprint or 0, None, None,
                          ph)
        st = lib.ccs_planset_run(plans._handle(), ch, src.ptr, dst.ptr,
                                 count, src.dtype, opc, stream,
                                 ctypes.byref(o))
    elif isinstance(plans, Plan):
        if topo_fingerprint and plans.topo_fingerprint and \
                topo_fingerprint != plans.topo_fingerprint:
            raise Error(L.ERR_MISMATCH, f"plan was made for topology "
                        f"0x{plans.topo_fingerprint:016x}, the job runs on "
                        f"0x{topo_fingerprint:016x}")
        o = L.RunOpts(-1 if straggler is None else straggler,
                      _coll_code(coll), None, ph)
        st = lib.ccs_run_ex(plans._handle(), ch, src.ptr, dst.ptr, count,
                            src.dtype, opc, stream, ctypes.byref(o))
    else:
        raise Error(L.ERR_INVALID, f"{coll}: plans must be a ccs.Plan or "
                    f"ccs.PlanSet, not {type(plans).__name__}")
    if st != 0:
        raise Error(st, lib.ccs_comm_last_error(ch).decode())
    return out


def _nranks(plans: PlansLike) -> int:
    if not isinstance(plans, (Plan, PlanSet)):
        raise Error(L.ERR_INVALID, "plans must be a ccs.Plan or ccs.PlanSet")
    return plans.nranks


def allreduce(plans: PlansLike, comm: Comm, x: Any, out: Any = None,
              op: str = "sum", straggler: Union[int, str, None] = None,
              topo_fingerprint: Optional[int] = None,
              plain: Optional["Plan"] = None) -> Any:
    """Allreduce ``x`` over ``comm``; in place unless ``out`` is given.

    ``op``: sum, prod, min, max, avg.  ``straggler``: this call's late rank
    for a plan with a straggler role (StragglAR), or ``"auto"``: the
    library measures who is late and picks per call, running ``plain``
    (e.g. a ring plan) when nobody is late enough to pay (docs/runtime.md,
    "Straggler auto").  Returns the output."""
    src = _Buf(x, "allreduce input", False)
    n = src.n
    return _run("allreduce", plans, comm, src, out, n, n, op, straggler,
                topo_fingerprint, plain)


def reduce(plans: PlansLike, comm: Comm, x: Any, out: Any = None,
           op: str = "sum", topo_fingerprint: Optional[int] = None) -> Any:
    """Reduce to the plan's root; in place unless ``out`` is given (off the
    root ``out`` is left as it was)."""
    src = _Buf(x, "reduce input", False)
    n = src.n
    return _run("reduce", plans, comm, src, out, n, n, op, None,
                topo_fingerprint)


def broadcast(plans: PlansLike, comm: Comm, x: Any, out: Any = None,
              topo_fingerprint: Optional[int] = None) -> Any:
    """Broadcast the root's ``x``; in place unless ``out`` is given."""
    src = _Buf(x, "broadcast input", False)
    n = src.n
    return _run("broadcast", plans, comm, src, out, n, n, "sum", None,
                topo_fingerprint)


def reducescatter(plans: PlansLike, comm: Comm, x: Any, out: Any = None,
                  op: str = "sum",
                  topo_fingerprint: Optional[int] = None) -> Any:
    """``x`` holds nranks blocks; returns (or fills ``out`` with) this rank's
    reduced block."""
    R = _nranks(plans)
    src = _Buf(x, "reducescatter input", False)
    n = src.n
    if n % R:
        raise Error(L.ERR_INVALID, f"reducescatter: {n} elements is not a "
                    f"multiple of {R} ranks")
    return _run("reducescatter", plans, comm, src, out, n // R, n // R, op,
                None, topo_fingerprint)


def allgather(plans: PlansLike, comm: Comm, x: Any, out: Any = None,
              topo_fingerprint: Optional[int] = None) -> Any:
    """Gather every rank's ``x`` into nranks blocks (returned or ``out``)."""
    R = _nranks(plans)
    src = _Buf(x, "allgather input", False)
    n = src.n
    return _run("allgather", plans, comm, src, out, n, n * R, "sum", None,
                topo_fingerprint)


def alltoall(plans: PlansLike, comm: Comm, x: Any, out: Any = None,
             topo_fingerprint: Optional[int] = None) -> Any:
    """Block j of ``x`` goes to rank j; returns (or fills ``out``) with
    block i from rank i.  In place when ``out`` is ``x``."""
    R = _nranks(plans)
    src = _Buf(x, "alltoall input", False)
    n = src.n
    if n % R:
        raise Error(L.ERR_INVALID, f"alltoall: {n} elements is not a "
                    f"multiple of {R} ranks")
    if out is None:
        out = src.new(n)
    return _run("alltoall", plans, comm, src, out, n // R, n, "sum", None,
                topo_fingerprint)
