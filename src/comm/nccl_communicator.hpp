// The NCCL backend of Communicator: GPU ranks, one GPU per process, on one or
// many nodes. Buffers are DEVICE pointers and every collective runs on the
// calling thread's stream (cuda::stream()) of the communicator's device.
//
// NCCL needs a host-side channel only to hand out its unique id: rank 0
// creates it and broadcasts it over a bootstrap Communicator (the MPI one,
// whose ranks and size the NCCL communicator takes over).
//
// As with MPI, no call waits forever: the communicator is NCCL's non-blocking
// kind (ncclConfig_t::blocking = 0), and set-up and every collective are
// polled until done or until timeout_seconds. On a timeout or an NCCL error
// the communicator is aborted (ncclCommAbort, which also stops its kernels
// still running on the GPU), the call throws xtrain::Error, and every later
// call throws too: the job must end, as after an MPI failure.
//
// Defined in every CUDA build; without NCCL (XTRAIN_HAVE_NCCL unset)
// make_nccl_communicator throws xtrain::Error saying so.
#pragma once

#include <memory>

#include "xtrain/comm.hpp"

namespace xtrain {

// True when this build of xtrain has the NCCL backend.
bool nccl_available();

// The NCCL communicator of bootstrap's ranks, on CUDA device `device` (the
// process's GPU, usually its ProcessGroup::local_rank), which it makes the
// calling thread's current device. Every rank of `bootstrap` must call it.
// Throws xtrain::Error when the device cannot be used, when NCCL fails, or
// when set-up has not finished within timeout_seconds (> 0).
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device,
                                                     double timeout_seconds);

}  // namespace xtrain
