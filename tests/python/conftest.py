"""Shared set-up of the Python tests: libccs and ccsynth from the build
tree ($BUILD, default build/), plans synthesized once per session."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
CCSYNTH = os.path.join(BUILD, "bin", "ccsynth")

os.environ.setdefault("CCS_LIBRARY", os.path.join(BUILD, "lib", "libccs.so"))
# CCS_TEST_INSTALLED=1 (tests/e2e/python.sh): test the pip-installed
# package; otherwise the source tree's python/.
if os.environ.get("CCS_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(ROOT, "python"))


def synth(out_dir, name, *args):
    path = os.path.join(out_dir, name)
    subprocess.run([CCSYNTH, "synth", *args, "-o", path], check=True,
                   stdout=subprocess.DEVNULL)
    return path


@pytest.fixture(scope="session")
def plans(tmp_path_factory):
    """Paths of plans for 4 ranks on switch:4 (and one for 2 ranks)."""
    d = str(tmp_path_factory.mktemp("plans"))
    p = {
        "ring": synth(d, "ring.ccs", "--algo", "ring", "--topo", "switch:4"),
        "stragglar": synth(d, "s.ccs", "--algo", "stragglar", "--topo",
                           "switch:4", "--straggler", "3"),
        "rs": synth(d, "rs.ccs", "--algo", "ring", "--coll",
                    "reducescatter", "--topo", "switch:4"),
        "ag": synth(d, "ag.ccs", "--algo", "ring", "--coll", "allgather",
                    "--topo", "switch:4"),
        "reduce": synth(d, "red.ccs", "--algo", "dbtree", "--coll", "reduce",
                        "--topo", "switch:4", "--root", "1"),
        "bcast": synth(d, "bc.ccs", "--algo", "dbtree", "--coll",
                       "broadcast", "--topo", "switch:4", "--root", "2"),
        "a2a": synth(d, "a2a.ccs", "--algo", "allpairs", "--coll",
                     "alltoall", "--topo", "switch:4"),
        "ring2": synth(d, "ring2.ccs", "--algo", "ring", "--topo",
                       "switch:2"),
    }
    tuned = os.path.join(d, "tuned")
    # ring:4 at 1 KiB .. 64 KiB under the ideal alpha-beta model: allpairs
    # below 16 KiB, multitree above (with NCCL's protocol model multitree
    # wins throughout, and the plan set would hold one algorithm)
    subprocess.run([CCSYNTH, "tune", "--topo", "ring:4", "--sizes",
                    "1K:64K", "--proto", "ideal", "-q", "--emit", tuned],
                   check=True,
                   stdout=subprocess.DEVNULL)
    p["tuned"] = tuned
    p["dir"] = d
    return p
