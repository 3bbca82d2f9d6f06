"""ctypes declarations of libccs (runtime/ccs.h); internal.

The library is found, in this order, at $CCS_LIBRARY (a path to
libccs.so), next to this package (a copy placed there), then by the
dynamic loader's search ("libccs.so": LD_LIBRARY_PATH, the ld.so cache
after ``make install`` and ``ldconfig``).  Nothing is compiled: the C API is
declared here by hand and must follow ccs.h.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Optional

c_int, c_int32, c_uint32, c_uint64, c_size_t, c_void_p, c_char_p = (
    ctypes.c_int, ctypes.c_int32, ctypes.c_uint32, ctypes.c_uint64,
    ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p)

MSG_LEN = 1024

# Values from ccs.h: stored in files or ABI, never renumbered there.
COLLS = ("allreduce", "reducescatter", "allgather", "reduce", "broadcast",
         "alltoall")
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64",
          "uint8")
OPS = ("sum", "prod", "min", "max", "avg")
COLL_COUNT = len(COLLS)
ERR_INVALID = -1
ERR_MISMATCH = -11
ERR_NO_DEVICE = -13
ERR_UNSUPPORTED = -7
ERR_NCCL = -15
ERR_MPI = -16


class PlanInfo(ctypes.Structure):
    _fields_ = [("coll", c_int), ("nranks", c_uint32), ("nchunks", c_uint32),
                ("nscratch", c_uint32), ("nsteps", c_uint32),
                ("nphases", c_uint32), ("root", c_int32),
                ("straggler", c_int32), ("topo_fingerprint", c_uint64),
                ("algo", ctypes.c_char * 32)]


class PlanSetInfo(ctypes.Structure):
    _fields_ = [("coll", c_int), ("nranks", c_uint32), ("nplans", c_uint32),
                ("nranges", c_uint32), ("topo_fingerprint", c_uint64),
                ("elem_bytes", c_uint32)]


# ccs.h's CCS_STRAGGLER_AUTO: the library finds the straggler per call.
STRAGGLER_AUTO = -2


class RunOpts(ctypes.Structure):
    _fields_ = [("straggler", c_int32), ("expect_coll", c_int),
                ("stats", c_void_p), ("plain", c_void_p)]


class PlanSetOpts(ctypes.Structure):
    _fields_ = [("straggler", c_int32), ("expect_coll", c_int),
                ("topo_fingerprint", c_uint64), ("stats", c_void_p),
                ("plan_index", ctypes.POINTER(c_uint32)),
                ("plain", c_void_p)]


def _preload_mpi() -> None:
    # Open MPI's plugins resolve symbols of libmpi globally; ctypes loads
    # libccs (and with it libmpi) RTLD_LOCAL, so load libmpi globally first,
    # as mpi4py does.  Harmless where libccs has no MPI.
    name = ctypes.util.find_library("mpi")
    if name:
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass


def _candidates() -> list:
    env = os.environ.get("CCS_LIBRARY")
    if env:
        return [env]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "libccs.so")
    return [here, "libccs.so"]


_lib: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The loaded libccs, declared; raises OSError with where it looked."""
    global _lib
    if _lib is not None:
        return _lib
    _preload_mpi()
    tried = []
    handle = None
    for path in _candidates():
        if path != "libccs.so" and not os.path.exists(path):
            tried.append(f"{path} (missing)")
            continue
        try:
            handle = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append(f"{path} ({e})")
    if handle is None:
        raise OSError("ccs: cannot load libccs.so; tried " + ", ".join(tried)
                      + ". Build it (make) and set CCS_LIBRARY=/path/to/"
                      "libccs.so, or `make install` it and run ldconfig")
    _declare(handle)
    _lib = handle
    return handle


def _fn(h, name, res, *args):
    f = getattr(h, name)
    f.restype = res
    f.argtypes = list(args)


def _declare(h: ctypes.CDLL) -> None:
    P = c_void_p
    PP = ctypes.POINTER(c_void_p)
    _fn(h, "ccs_strerror", c_char_p, c_int)
    _fn(h, "ccs_status_name", c_char_p, c_int)
    _fn(h, "ccs_version", c_int)
    _fn(h, "ccs_plan_load_file_msg", c_int, c_char_p, PP, c_char_p,
        c_size_t)
    _fn(h, "ccs_plan_destroy", None, P)
    _fn(h, "ccs_plan_get_info", c_int, P, ctypes.POINTER(PlanInfo))
    _fn(h, "ccs_planset_load", c_int, c_char_p, PP, c_char_p, c_size_t)
    _fn(h, "ccs_planset_destroy", None, P)
    _fn(h, "ccs_planset_get_info", c_int, P, ctypes.POINTER(PlanSetInfo))
    _fn(h, "ccs_planset_plan", P, P, c_uint32)
    _fn(h, "ccs_planset_range", c_int, P, c_uint32,
        ctypes.POINTER(c_uint64), ctypes.POINTER(c_uint64),
        ctypes.POINTER(c_uint32))
    _fn(h, "ccs_planset_pick", c_int, P, c_size_t, ctypes.POINTER(c_uint32))
    _fn(h, "ccs_planset_call_bytes", c_size_t, P, c_size_t, c_int)
    _fn(h, "ccs_comm_init_threads", c_int, c_int, PP)
    _fn(h, "ccs_comm_init_mpi", c_int, P, PP)
    _fn(h, "ccs_comm_init_mpi_world", c_int, PP)
    _fn(h, "ccs_comm_init_nccl_msg", c_int, P, PP, c_char_p, c_size_t)
    _fn(h, "ccs_comm_destroy", None, P)
    _fn(h, "ccs_comm_rank", c_int, P)
    _fn(h, "ccs_comm_size", c_int, P)
    _fn(h, "ccs_comm_transport", c_char_p, P)
    _fn(h, "ccs_comm_last_error", c_char_p, P)
    _fn(h, "ccs_run_ex", c_int, P, P, P, P, c_size_t, c_int, c_int, P,
        ctypes.POINTER(RunOpts))
    _fn(h, "ccs_planset_run", c_int, P, P, P, P, c_size_t, c_int, c_int, P,
        ctypes.POINTER(PlanSetOpts))
