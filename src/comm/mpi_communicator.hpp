// The MPI backend of Communicator (CPU buffers, one or many nodes).
//
// Defined only in builds with MPI (XTRAIN_HAVE_MPI); make_communicator picks
// it for a group of several processes.
#pragma once

#include <climits>
#include <cstddef>
#include <memory>

#include "xtrain/comm.hpp"

namespace xtrain {

// MPI counts are ints: a call on more than max_chunk values runs as several
// collectives of at most max_chunk values each (tests pass a small one).
std::unique_ptr<Communicator> make_mpi_communicator(const ProcessGroup& group,
                                                    double timeout_seconds,
                                                    std::size_t max_chunk = INT_MAX);

// abort_job_at_exit's MPI part: MPI_Abort at exit, if MPI was started.
void abort_mpi_job_at_exit();

}  // namespace xtrain
