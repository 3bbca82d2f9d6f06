/*
 * xport_gpu_stub.c - the GPU init entry points with messages in a build
 * without CUDA (CUDA=0, or no nvcc): they exist, so programs link the same
 * way everywhere, and say why they cannot work.  (comm.c has the same for
 * ccs_comm_init_cuda / ccs_comm_init_nccl.)  With CUDA, xport_cuda.c and
 * xport_nccl.c define them and this file is empty.
 */
#include <stdio.h>

#include "ccs.h"

#ifndef CCS_HAVE_CUDA
static ccs_status_t no_cuda(const char *who, char *msg, size_t msglen)
{
    if (msg != NULL && msglen > 0)
        snprintf(msg, msglen, "%s: this libccs was built without CUDA "
                 "(CUDA=0 or no nvcc)", who);
    return CCS_ERR_UNSUPPORTED;
}

ccs_status_t ccs_comm_init_cuda_msg(int nranks, const int *devices,
                                    ccs_comm_t **comms, char *msg,
                                    size_t msglen)
{
    (void)nranks;
    (void)devices;
    (void)comms;
    return no_cuda("cuda transport", msg, msglen);
}

ccs_status_t ccs_comm_init_nccl_msg(void *nccl_comm, ccs_comm_t **comm,
                                    char *msg, size_t msglen)
{
    (void)nccl_comm;
    (void)comm;
    return no_cuda("nccl transport", msg, msglen);
}
#else
/* ISO C forbids an empty translation unit. */
typedef int ccs_xport_gpu_stub_unused;
#endif
