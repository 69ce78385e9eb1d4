// The interface through which a Solver exchanges gradients and weights with
// the other replicas of a data-parallel job (SolverOptions::communicator).
//
// It is apart from xtrain/comm.hpp so that the solver depends only on what
// it calls: the backends that implement it (MPI, NCCL, threads) and the
// launcher's process group live in the comm module, above the solvers
// (docs/architecture.md).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

// A collective under way (Communicator::start_allreduce_sum). Its buffer
// must stay untouched until wait() returns.
class XTRAIN_API PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Whether it has finished; may advance it (MPI makes progress only inside
  // its calls). Throws xtrain::Error as wait() does.
  virtual bool poll() = 0;
  // Returns when it has finished; throws xtrain::Error when it has not
  // within the communicator's timeout, or failed.
  virtual void wait() = 0;
};

class XTRAIN_API Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "none", "mpi", "gloo", "threads" or "nccl"

  // Whether the buffers of the collectives below are device (GPU) memory:
  // true for NCCL (src/comm/nccl_communicator.hpp), false for the host
  // backends. The solver asks it to exchange gradients where they are,
  // without copying them to the host and back.
  virtual bool works_on_device_memory() const { return false; }

  // data[i] = the sum over ranks of data[i], on every rank, in place. Every
  // rank calls with the same count. The order of the sum is fixed by the
  // backend, so every rank gets the same bits.
  virtual void allreduce_sum(float* data, std::size_t count) = 0;
  virtual void allreduce_sum(double* data, std::size_t count) = 0;

  // allreduce_sum that returns once it has started, so that the caller can
  // compute while the values travel (data-parallel training sums each
  // bucket of gradients while backward goes on). Every rank starts the same
  // collectives in the same order. This default runs it at once.
  virtual std::unique_ptr<PendingCollective> start_allreduce_sum(float* data, std::size_t count);

  // data = root's data, on every rank. Every rank calls with the same count
  // and root.
  virtual void broadcast(float* data, std::size_t count, int root) = 0;
  virtual void broadcast(double* data, std::size_t count, int root) = 0;

  // Returns when every rank has called it.
  virtual void barrier() = 0;

  // Why this group's collectives can no longer finish, once a member is
  // known to have failed (a ThreadReplicas replica threw); "" while they
  // can. A communicator bootstrapped on this one (NCCL) polls it while it
  // waits, so that it gives up at once instead of waiting out its timeout.
  // Safe to call from any thread at any time.
  virtual std::string failure() const { return ""; }
};

}  // namespace xtrain
