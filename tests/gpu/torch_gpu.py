"""ccs from PyTorch on the NCCL transport, the parts one process can check
(scripts/gpu-check.sh; the 2-GPU DDP run is tests/python/ddp_train.py
--cuda under torchrun).

    torch_gpu.py PLAN_FOR_2_RANKS

A one-rank process group (gloo: it needs no GPU); Comm.from_torch must
either fail with CCS_ERR_NO_DEVICE ("no CUDA device": exit 3, the message
printed) or make a 1-rank NCCL communicator on which a CPU tensor and a
plan for 2 ranks are refused with clear errors (exit 0; 1 on any
surprise).
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist

import ccs

with tempfile.TemporaryDirectory() as d:
    dist.init_process_group("gloo", store=dist.FileStore(
        os.path.join(d, "store"), 1), rank=0, world_size=1)
    try:
        comm = ccs.Comm.from_torch()
    except ccs.Error as e:
        print(f"Comm.from_torch: {e}")
        sys.exit(3 if e.name == "CCS_ERR_NO_DEVICE" else 1)
    print(f"Comm.from_torch: {comm} on {torch.cuda.get_device_name()}")
    plan = ccs.Plan.load(sys.argv[1])
    bad = 0
    for what, fn, want in [
        ("CPU tensor", lambda: ccs.allreduce(plan, comm, torch.zeros(4)),
         "CPU buffer on the nccl transport"),
        ("2-rank plan", lambda: ccs.allreduce(plan, comm,
                                              torch.zeros(4, device="cuda")),
         "the communicator has 1")]:
        try:
            fn()
            print(f"{what}: accepted, should be refused")
            bad += 1
        except ccs.Error as e:
            ok = want in e.message
            print(f"{what}: refused: {e}" + ("" if ok else " (UNEXPECTED)"))
            bad += not ok
    comm.close()
    dist.destroy_process_group()
    sys.exit(1 if bad else 0)
