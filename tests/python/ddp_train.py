"""DDP training with PyTorch's allreduce and with the ccs hook, compared.

Run under `mpirun -np 4` (tests/python/test_ddp_mpi.py does): each process
is one rank; PyTorch's process group is gloo over TCP, ccs runs over MPI.
With --cuda, under torchrun, one GPU per process (scripts/gpu-check.sh):
the process group is NCCL and ccs runs on Comm.from_torch (its own NCCL
communicator, on the current stream).
A small MLP trains for STEPS steps on per-rank data, first with DDP's own
allreduce (the reference), then with ccs.torch.allreduce_hook and each
plan given on the command line; losses and every parameter must match the
reference to floating-point tolerance after every step.  With --late, one
rank (a different one each step) sleeps before its backward pass and the
StragglAR plan is told which one.  Rank 0 prints one line per run.

    ddp_train.py [--cuda] PORT STEPS NAME=PLAN_OR_DIR ...
                 [--late NAME=PLAN] [--wrong-ranks PLAN]
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import ccs
import ccs.torch

RTOL, ATOL = 1e-5, 1e-6
LATE_S = 0.02


def model_and_data(rank, dev):
    torch.manual_seed(1234)             # same initial weights everywhere
    m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4096),
                      nn.ReLU(), nn.Linear(4096, 10))
    g = torch.Generator().manual_seed(100 + rank)
    xs = torch.randn(8, 16, 32, generator=g)
    ys = torch.randint(0, 10, (8, 16), generator=g)
    return m.to(dev), xs.to(dev), ys.to(dev)


def train(rank, dev, steps, hook_state=None, late=None):
    """Losses and flattened parameters after each step."""
    m, xs, ys = model_and_data(rank, dev)
    # DDP's first bucket holds up to 1 MiB, the others here 4 KB: the
    # gradients travel as one 1.2 MB bucket (the last three tensors) and
    # one of 8.4 KB (the first layer), so a plan set tuned at 1 .. 64 KiB
    # runs a different plan for each.
    ddp = DDP(m, bucket_cap_mb=0.004,
              device_ids=[dev] if dev.type == "cuda" else None)
    if hook_state is not None:
        ddp.register_comm_hook(hook_state, ccs.torch.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    hist = []
    for step in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(xs[step % 8]),
                                           ys[step % 8])
        if late is not None:
            late["step"] = step
            if rank == step % dist.get_world_size():
                time.sleep(LATE_S)
        loss.backward()
        opt.step()
        with torch.no_grad():
            flat = torch.cat([p.detach().reshape(-1).clone()
                              for p in m.parameters()])
        hist.append((loss.item(), flat.cpu()))
    return hist


def compare(name, ref, got):
    for step, ((l0, p0), (l1, p1)) in enumerate(zip(ref, got)):
        if not torch.allclose(p0, p1, rtol=RTOL, atol=ATOL) or \
                abs(l0 - l1) > ATOL + RTOL * abs(l0):
            d = (p0 - p1).abs().max().item()
            raise SystemExit(f"{name}: step {step} differs from torch's "
                             f"allreduce: loss {l1!r} vs {l0!r}, max "
                             f"param diff {d:.3g}")
    return max((p0 - p1).abs().max().item() for (_, p0), (_, p1)
               in zip(ref, got))


def main():
    argv = sys.argv[1:]
    cuda = argv[0] == "--cuda"
    if cuda:
        argv = argv[1:]
    port, steps = int(argv[0]), int(argv[1])
    args = argv[2:]
    if "RANK" in os.environ:                # torchrun
        rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        init = "env://"
    else:                                   # mpirun
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
        init = f"tcp://127.0.0.1:{port}"
    torch.set_num_threads(1)
    if cuda:
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
        torch.cuda.set_device(dev)
    else:
        dev = torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo", init_method=init,
                            rank=rank, world_size=size)
    comm = ccs.Comm.from_torch() if cuda else ccs.Comm.from_mpi()
    say = print if rank == 0 else (lambda *a, **k: None)

    t0 = time.perf_counter()
    ref = train(rank, dev, steps)
    say(f"{comm}", flush=True)
    say(f"torch-allreduce: {steps} steps, {time.perf_counter() - t0:.2f} s, "
        f"final loss {ref[-1][0]:.6f}", flush=True)

    i = 0
    while i < len(args):
        a = args[i]
        if a == "--wrong-ranks":
            # A plan for another rank count: every rank gets the error, no
            # rank hangs, the job goes on.
            try:
                ccs.torch.HookState(comm, ccs.Plan.load(args[i + 1]))
                raise SystemExit("wrong rank count accepted")
            except ccs.Error as e:
                assert e.name == "CCS_ERR_MISMATCH", e
            try:
                ccs.allreduce(ccs.Plan.load(args[i + 1]), comm,
                              torch.zeros(4, device=dev))
                raise SystemExit("wrong rank count accepted")
            except ccs.Error as e:
                assert "the communicator has" in e.message, e
            say("wrong-ranks: refused with CCS_ERR_MISMATCH on every rank",
                flush=True)
            i += 2
            continue
        late = a == "--late"
        if late:
            i += 1
            a = args[i]
        name, path = a.split("=", 1)
        plans = ccs.PlanSet.load(path) if os.path.isdir(path) \
            else ccs.Plan.load(path)
        ctx = {"step": 0} if late else None
        straggler = (lambda: ctx["step"] % size) if late else None
        state = ccs.torch.HookState(comm, plans, straggler=straggler)
        t0 = time.perf_counter()
        got = train(rank, dev, steps, state, ctx)
        wall = time.perf_counter() - t0
        diff = compare(name, ref, got)
        used = ""
        if isinstance(plans, ccs.PlanSet):
            used = ", plans used " + ", ".join(
                f"{plans.plans[k].algo}:{v}"
                for k, v in sorted(state.plans_used.items()))
            if len(state.plans_used) < 2:
                raise SystemExit(f"{name}: every bucket ran one plan "
                                 f"({state.plans_used})")
        say(f"ccs-{name}{' (late rank)' if late else ''}: {steps} steps, "
            f"{wall:.2f} s, {state.calls} buckets, max param diff "
            f"{diff:.2g}{used}", flush=True)
        i += 1
    comm.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
