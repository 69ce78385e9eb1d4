// The Gloo backend of Communicator: CPU buffers, one or many nodes, no MPI.
// The ranks meet in a shared directory (ProcessGroup::rendezvous;
// src/comm/gloo_rendezvous.hpp) and sum over Gloo's TCP transport.
//
// Gloo's collectives block their caller, so they run one after another on a
// thread of the communicator's own: start_allreduce_sum queues a sum and
// returns, and backward goes on while it travels (the gradient buckets).
// Every collective must finish within the timeout; when one fails or times
// out, the rank asks the others who is there (GlooPeerWatch) and throws one
// line naming the lost rank and its host. The communicator is then
// unusable and the process should end; its peers' collectives fail at once,
// since Gloo closes the failed rank's connections.
//
// Defined only in builds with Gloo (XTRAIN_HAVE_GLOO); make_communicator
// picks it for a group with a rendezvous directory.
#pragma once

#include <memory>

#include "xtrain/comm.hpp"

namespace xtrain {

std::unique_ptr<Communicator> make_gloo_communicator(const ProcessGroup& group,
                                                     double timeout_seconds);

}  // namespace xtrain
