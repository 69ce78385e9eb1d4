// Communication between the processes of one data-parallel job.
//
// A job is several processes (one per GPU or per CPU socket) on one or many
// nodes, started by mpirun or srun. Each learns its place from the launcher's
// environment (process_group_from_environment) and talks to the others
// through a Communicator: gradients summed with allreduce_sum, weights sent
// from the root with broadcast.
//
// Backends: "none" (one process; every call returns at once) and "mpi" (CPU
// buffers, one or many nodes; needs a build with libopenmpi-dev).
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
#include <memory>
#include <string>

namespace xtrain {

// This process's place in the job.
struct ProcessGroup {
  int rank = 0;        // 0 .. size-1, unique in the job
  int size = 1;        // how many processes the job has
  int local_rank = 0;  // 0 .. processes on this node - 1: picks the GPU
  // Where the values came from: "none" (a lone process), "openmpi", "pmi"
  // (MPICH, Intel MPI and other Hydra-style launchers) or "slurm".
  std::string launcher = "none";
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
ProcessGroup process_group_from_environment();

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "none", "mpi" or "nccl"

  // Whether the buffers of the collectives below are device (GPU) memory:
  // true for NCCL (src/cuda/nccl_communicator.hpp), false for the host
  // backends. The solver asks it to exchange gradients where they are,
  // without copying them to the host and back.
  virtual bool works_on_device_memory() const { return false; }

  // data[i] = the sum over ranks of data[i], on every rank, in place. Every
  // rank calls with the same count. The order of the sum is fixed by the
  // backend, so every rank gets the same bits.
  virtual void allreduce_sum(float* data, std::size_t count) = 0;
  virtual void allreduce_sum(double* data, std::size_t count) = 0;

  // data = root's data, on every rank. Every rank calls with the same count
  // and root.
  virtual void broadcast(float* data, std::size_t count, int root) = 0;
  virtual void broadcast(double* data, std::size_t count, int root) = 0;

  // Returns when every rank has called it.
  virtual void barrier() = 0;
};

// True when this build of xtrain has the MPI backend.
bool mpi_available();

// The communicator for `group`: the single-process one when group.size == 1,
// else MPI's (which checks that MPI sees the same rank and size). Every
// collective throws xtrain::Error when it has not finished within
// timeout_seconds (> 0). A group of several processes in a build without MPI
// throws xtrain::Error saying how to get it.
std::unique_ptr<Communicator> make_communicator(const ProcessGroup& group, double timeout_seconds);

// For GPU ranks: the communicator of bootstrap's ranks that works on device
// memory of GPU `device` (NCCL, its unique id sent over `bootstrap`). Throws
// xtrain::Error in a build without CUDA and NCCL, when the GPU cannot be
// used, or when set-up has not finished within timeout_seconds.
std::unique_ptr<Communicator> make_gpu_communicator(Communicator& bootstrap, int device,
                                                    double timeout_seconds);

}  // namespace xtrain
