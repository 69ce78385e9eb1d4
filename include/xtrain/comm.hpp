// Communication between the processes of one data-parallel job.
//
// A job is several processes (one per GPU or per CPU socket) on one or many
// nodes, started by mpirun or srun. Each learns its place from the launcher's
// environment (process_group_from_environment) and talks to the others
// through a Communicator (xtrain/communicator.hpp): gradients summed with
// allreduce_sum, weights sent from the root with broadcast.
//
// Backends: "none" (one process; every call returns at once), "mpi" (CPU
// buffers, one or many nodes; needs a build with libopenmpi-dev), "gloo"
// (CPU buffers, one or many nodes that meet in a shared directory, no MPI;
// needs libgloo-dev), "threads"
// (replicas in one process: ThreadReplicas below) and "nccl" (GPU buffers,
// bootstrapped over one of the others: make_gpu_communicator).
//
// No call waits forever: each collective must finish within the timeout given
// to make_communicator, else it throws xtrain::Error saying which rank gave up
// on what. MPI cannot cancel a collective that another rank never joins, so
// after such an error the communicator refuses every call and the job must
// end: when the process exits (returns from main or calls std::exit) the MPI
// backend calls MPI_Abort, and the launcher then stops every other rank. A
// tool therefore catches the error, prints it, and returns from main.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xtrain/communicator.hpp"
#include "xtrain/export.hpp"

namespace xtrain {

// This process's place in the job.
struct XTRAIN_API ProcessGroup {
  int rank = 0;        // 0 .. size-1, unique in the job
  int size = 1;        // how many processes the job has
  int local_rank = 0;  // 0 .. processes on this node - 1: picks the GPU
  // Where the values came from: "none" (a lone process), "openmpi", "pmi"
  // (MPICH, Intel MPI and other Hydra-style launchers), "slurm", "torchrun"
  // or "flags" (process_group_for_rendezvous).
  std::string launcher = "none";
  // A directory every rank sees, where the ranks meet (Gloo's FileStore):
  // the job needs no MPI. Empty: the ranks are MPI's.
  std::string rendezvous;
};

// Reads the launcher's variables, first found wins:
//   Open MPI:      OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
//   MPICH / Hydra: PMI_RANK, PMI_SIZE, MPI_LOCALRANKID (else SLURM_LOCALID)
//   Slurm (srun):  SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
// MPI's variables come first: mpirun inside a Slurm allocation leaves the
// allocation's SLURM_* variables in place. None of them set: a lone process.
// A malformed value (not a whole number, rank outside 0..size-1, size < 1) or
// a launcher's variable missing while others are set throws xtrain::Error
// naming the variable.
XTRAIN_API ProcessGroup process_group_from_environment();

// The group of a job that meets in `directory` (backend "gloo"): rank and
// size from `rank` and `size` when given (>= 0: the --rank and --world_size
// flags; local rank from LOCAL_RANK, else 0), else from the launcher's
// variables above, else from torchrun's RANK, WORLD_SIZE and LOCAL_RANK.
// Throws xtrain::Error when none says the job's size, when only one of rank
// and size is given, or when they are inconsistent.
XTRAIN_API ProcessGroup process_group_for_rendezvous(const std::string& directory, int rank,
                                                     int size);

namespace detail {
struct ThreadGroupState;  // src/comm/thread_replicas.cpp
}

// Several replicas of one training in one process, one thread each (one per
// GPU of a machine: `xtrain train --gpu=0,1`). Their communicators (backend
// "threads") sum and broadcast host memory in place, in a fixed order, so
// every replica gets the same bits. When a replica fails, run() makes the
// others' collectives fail at once instead of waiting out the timeout.
class XTRAIN_API ThreadReplicas {
 public:
  // `size` replicas (>= 1); each collective must finish within
  // timeout_seconds (> 0), else it throws xtrain::Error.
  ThreadReplicas(int size, double timeout_seconds);
  ~ThreadReplicas();
  ThreadReplicas(const ThreadReplicas&) = delete;
  ThreadReplicas& operator=(const ThreadReplicas&) = delete;

  int size() const;
  // Replica `rank`'s communicator (for that replica's thread only).
  Communicator& communicator(int rank);
  // Runs replica(rank) for every rank, each on a thread of its own (rank 0
  // on the calling thread), and returns when all have returned. If any
  // throws, the others' pending and later collectives throw too, and run()
  // rethrows the first failure (the cause, not the others' "replica r
  // failed" errors). A group runs once.
  void run(const std::function<void(int rank)>& replica);

 private:
  std::shared_ptr<detail::ThreadGroupState> shared_;
  std::vector<std::unique_ptr<Communicator>> communicators_;
  bool ran_ = false;
};

// True when this build of xtrain has the MPI backend.
XTRAIN_API bool mpi_available();
// True when this build of xtrain has the Gloo backend (--rendezvous).
XTRAIN_API bool gloo_available();

// For a process leaving its job on an error: at exit the MPI backend calls
// MPI_Abort, so that the launcher stops the other ranks at once instead of
// leaving them to wait out their collective timeout for this one. Nothing
// happens in a process that never started MPI.
XTRAIN_API void abort_job_at_exit();

// The communicator for `group`: the single-process one when group.size == 1,
// else Gloo's when group.rendezvous is set (the ranks meet there first,
// within timeout_seconds), else MPI's (which checks that MPI sees the same
// rank and size). Every
// collective throws xtrain::Error when it has not finished within
// timeout_seconds (> 0). A group of several processes in a build without
// the backend it needs throws xtrain::Error saying how to get it.
XTRAIN_API std::unique_ptr<Communicator> make_communicator(const ProcessGroup& group,
                                                           double timeout_seconds);

// For GPU ranks: the communicator of bootstrap's ranks that works on device
// memory of GPU `device` (NCCL, its unique id sent over `bootstrap`, whose
// failure() it watches: bootstrap must outlive it). Throws
// xtrain::Error in a build without CUDA and NCCL, when the GPU cannot be
// used, or when set-up has not finished within timeout_seconds.
XTRAIN_API std::unique_ptr<Communicator> make_gpu_communicator(Communicator& bootstrap, int device,
                                                               double timeout_seconds);

}  // namespace xtrain
