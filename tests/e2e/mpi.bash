# Sourced by the tests/e2e scripts that start MPI jobs (not itself a test:
# run-tests.sh runs *.sh only).  Open MPI may run as root in containers, uses
# shared memory between the processes of this one machine, and yields while
# it waits, since the jobs oversubscribe 2 cores; a rank that waits for a
# peer gives up after 60 s instead of the library's 300 s default.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
export CCS_TIMEOUT_S=60
