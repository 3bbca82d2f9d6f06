"""PyTorch integration: a DDP communication hook that runs ccsynth plans.

    import ccs, ccs.torch
    state = ccs.torch.HookState(ccs.Comm.from_mpi(), ccs.PlanSet.load("tuned"))
    ddp.register_comm_hook(state, ccs.torch.allreduce_hook)

Every gradient bucket is allreduced by the plan the set holds for the
bucket's byte count (buckets of different sizes may run different plans)
and averaged over the ranks, as DDP's own hook does.  CPU buckets need an
MPI (or threads) communicator; CUDA buckets a :meth:`ccs.Comm.from_torch`
one, and run on the current CUDA stream.

Only APIs present in PyTorch 1.13 and 2.x are used: ``GradBucket.buffer()``
and ``torch.futures.Future``.
"""
# No `from __future__ import annotations`: DDP's register_comm_hook checks
# the hook's annotations against the objects dist.GradBucket and
# torch.futures.Future[torch.Tensor], and strings would fail that check.
from collections import Counter
from typing import Callable, Optional, Union

import torch
import torch.distributed as dist

import ccs

__all__ = ["HookState", "allreduce_hook"]

Straggler = Union[None, int, str, Callable[[], Optional[int]]]


class HookState:
    """What :func:`allreduce_hook` needs: the communicator and the plans.

    ``straggler``: None, a rank, or a callable returning this step's late
    rank (or None); it is asked once per bucket and must give the same
    answer on every rank.  It needs plans with a straggler role
    (StragglAR).  ``straggler="auto"``: the library finds the late rank
    itself, the same on every rank by construction, and runs ``plain`` (a
    ccs.Plan of another algorithm, e.g. a ring) when nobody is late enough
    to pay (docs/runtime.md, "Straggler auto").  ``average``: divide the sum by the number of ranks (what
    DDP expects; False leaves the sum).  ``topo_fingerprint``: refuse plans
    tuned for another topology.  ``calls`` counts buckets and ``plans_used``
    counts, per plan index of a plan set (0 for a single plan), the buckets
    it ran.
    """

    def __init__(self, comm: ccs.Comm, plans: ccs.PlansLike,
                 straggler: Straggler = None, average: bool = True,
                 topo_fingerprint: Optional[int] = None,
                 plain: Optional[ccs.Plan] = None):
        if not isinstance(comm, ccs.Comm):
            raise ccs.Error(-1, "HookState: comm must be a ccs.Comm (make "
                            "one with ccs.Comm.from_mpi or from_torch "
                            "first)")
        if not isinstance(plans, (ccs.Plan, ccs.PlanSet)):
            raise ccs.Error(-1, "HookState: plans must be a ccs.Plan or "
                            "ccs.PlanSet")
        if plans.coll != "allreduce":
            raise ccs.Error(-11, f"HookState: plans are for {plans.coll}, "
                            "DDP needs allreduce")
        if plans.nranks != comm.size:
            raise ccs.Error(-11, f"HookState: plans are for {plans.nranks} "
                            f"ranks, the communicator has {comm.size}")
        if isinstance(straggler, str) and straggler != "auto":
            raise ccs.Error(-1, f"HookState: straggler {straggler!r}: want "
                            "None, a rank, a callable or 'auto'")
        if plain is not None and straggler != "auto":
            raise ccs.Error(-1, "HookState: plain is for straggler='auto'")
        self.plain = plain
        self.comm = comm
        self.plans = plans
        self.straggler = straggler
        self.average = average
        self.topo_fingerprint = topo_fingerprint
        self.calls = 0
        self.plans_used: Counter = Counter()

    def __setstate__(self, state: dict) -> None:  # pragma: no cover
        # DDP pickles hook states only when the model is; a communicator
        # cannot travel, so say so instead of failing later.
        raise ccs.Error(-1, "ccs.torch.HookState cannot be unpickled: make "
                        "a new one with a live communicator")


def allreduce_hook(state: HookState, bucket: dist.GradBucket
                   ) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: allreduce (and average) the bucket with ccs plans.

    The bucket is reduced in place, synchronously for CPU tensors and
    enqueued on the current stream for CUDA tensors; the returned future is
    complete (CUDA-aware for CUDA buckets)."""
    t = bucket.buffer()
    s = state.straggler() if callable(state.straggler) else state.straggler
    if isinstance(state.plans, ccs.PlanSet):
        nbytes = t.numel() * t.element_size()
        state.plans_used[state.plans.plans.index(
            state.plans.pick(nbytes))] += 1
    else:
        state.plans_used[0] += 1
    state.calls += 1
    ccs.allreduce(state.plans, state.comm, t,
                  op="avg" if state.average else "sum", straggler=s,
                  topo_fingerprint=state.topo_fingerprint, plain=state.plain)
    if t.is_cuda:
        fut = torch.futures.Future(devices=[t.device])
    else:
        fut = torch.futures.Future()
    fut.set_result(t)
    return fut
