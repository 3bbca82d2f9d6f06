"""End-to-end: 4 MPI processes train with DDP (gloo) using PyTorch's
allreduce and then the ccs hook with a ring plan, a StragglAR plan and a
tuned plan set; every step's loss and parameters must match (checked in
ddp_train.py, which exits non-zero on the first difference).  Then the
same with one rank late each step and StragglAR told which, and a plan for
the wrong rank count refused on every rank."""
import os
import socket
import subprocess
import sys

import ccs

HERE = os.path.dirname(os.path.abspath(__file__))
# CCS_E2E_SMALL=1 (sanitizer builds): fewer steps, still more than the
# ranks, so each rank is the late one at least once.
STEPS = 6 if os.environ.get("CCS_E2E_SMALL") == "1" else 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_matches_torch_allreduce(plans):
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl="self,vader", OMPI_MCA_mpi_yield_when_idle="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               PYTHONPATH=os.pathsep.join(
                   [os.path.dirname(os.path.dirname(ccs.__file__)),
                    env.get("PYTHONPATH", "")]),
               CCS_TIMEOUT_S="60")
    cmd = ["mpirun", "--oversubscribe", "-np", "4", sys.executable,
           os.path.join(HERE, "ddp_train.py"), str(free_port()), str(STEPS),
           f"ring={plans['ring']}", f"stragglar={plans['stragglar']}",
           f"tuned={plans['tuned']}", "--late",
           f"late={plans['stragglar']}", "--wrong-ranks", plans["ring2"]]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=240)
    print(p.stdout)
    assert p.returncode == 0, p.stdout[-3000:]
    out = p.stdout
    for line in (f"torch-allreduce: {STEPS} steps", f"ccs-ring: {STEPS} steps",
                 f"ccs-stragglar: {STEPS} steps", f"ccs-tuned: {STEPS} steps",
                 f"ccs-late (late rank): {STEPS} steps",
                 "wrong-ranks: refused with CCS_ERR_MISMATCH"):
        assert line in out, out
    # the tuned set ran more than one plan across the buckets
    assert "allpairs:" in out and "multitree:" in out, out
