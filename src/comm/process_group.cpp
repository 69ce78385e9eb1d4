// process_group_from_environment: the launcher's variables, checked.
#include <cerrno>
#include <cstdlib>
#include <string>

#include "xtrain/comm.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int whole_number(const char* name, const char* text) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  XTRAIN_CHECK(end != text && *end == '\0' && errno == 0 && value >= 0 && value <= 1 << 30,
               "the launcher's variable ", name, "='", text,
               "' is not a whole number >= 0; start xtrain with mpirun or srun, or unset ", name);
  return static_cast<int>(value);
}

int required_number(const char* name, const char* launcher_variable) {
  const char* text = variable(name);
  XTRAIN_CHECK(text != nullptr, launcher_variable, " is set but ", name,
               " is not: the launcher's environment is incomplete; start xtrain with "
               "mpirun or srun, or unset ",
               launcher_variable);
  return whole_number(name, text);
}

struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* fallback_local_rank;  // or nullptr
};

// MPI's launchers first: mpirun inside a Slurm allocation keeps SLURM_*.
constexpr LauncherVariables kLaunchers[] = {
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     nullptr},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "SLURM_LOCALID"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

ProcessGroup read_group(const LauncherVariables& names) {
  ProcessGroup group;
  group.launcher = names.launcher;
  const char* seen = variable(names.rank) != nullptr ? names.rank : names.size;
  group.rank = required_number(names.rank, seen);
  group.size = required_number(names.size, seen);
  const char* local_name = names.local_rank;
  if (variable(local_name) == nullptr && names.fallback_local_rank != nullptr &&
      variable(names.fallback_local_rank) != nullptr) {
    local_name = names.fallback_local_rank;
  }
  group.local_rank = required_number(local_name, seen);
  XTRAIN_CHECK(group.size >= 1, names.size, "=", group.size, " but a job has at least one process");
  XTRAIN_CHECK(group.rank < group.size, names.rank, "=", group.rank, " is not below ", names.size,
               "=", group.size, ": the launcher's environment is inconsistent");
  XTRAIN_CHECK(group.local_rank < group.size, local_name, "=", group.local_rank, " is not below ",
               names.size, "=", group.size, ": the launcher's environment is inconsistent");
  return group;
}

}  // namespace

ProcessGroup process_group_from_environment() {
  for (const LauncherVariables& names : kLaunchers) {
    if (variable(names.rank) != nullptr || variable(names.size) != nullptr) {
      return read_group(names);
    }
  }
  return ProcessGroup{};
}

ProcessGroup process_group_for_rendezvous(const std::string& directory, int rank, int size) {
  XTRAIN_CHECK(!directory.empty(), "--rendezvous needs a directory that every rank sees");
  XTRAIN_CHECK((rank < 0) == (size < 0), "give both --rank and --world_size (rank ",
               rank < 0 ? "unset" : std::to_string(rank), ", world_size ",
               size < 0 ? "unset" : std::to_string(size),
               "), or neither to take them from the launcher (srun, torchrun)");
  ProcessGroup group;
  if (size >= 0) {
    XTRAIN_CHECK(size >= 1, "--world_size=", size, ": a job has at least one process");
    XTRAIN_CHECK(rank < size, "--rank=", rank, " is not below --world_size=", size,
                 ": give each process its own rank 0 .. ", size - 1);
    group.rank = rank;
    group.size = size;
    group.launcher = "flags";
    if (const char* local = variable("LOCAL_RANK")) group.local_rank = whole_number("LOCAL_RANK", local);
  } else {
    group = process_group_from_environment();
    if (group.launcher == "none") {
      // torchrun and the launchers that copy it (Accelerate, DeepSpeed's, Kubeflow's).
      const LauncherVariables torchrun{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", nullptr};
      XTRAIN_CHECK(variable("RANK") != nullptr || variable("WORLD_SIZE") != nullptr,
                   "--rendezvous='", directory,
                   "' needs this process's place in the job: give --rank and --world_size, or "
                   "start it with srun (SLURM_PROCID, SLURM_NTASKS) or torchrun (RANK, "
                   "WORLD_SIZE)");
      if (variable("LOCAL_RANK") == nullptr) {
        // Some launchers set only RANK and WORLD_SIZE: one rank per node.
        const int whole = required_number("WORLD_SIZE", "RANK");
        group.rank = required_number("RANK", "WORLD_SIZE");
        group.size = whole;
        group.launcher = "torchrun";
        XTRAIN_CHECK(group.size >= 1 && group.rank < group.size, "RANK=", group.rank,
                     " is not below WORLD_SIZE=", group.size,
                     ": the launcher's environment is inconsistent");
      } else {
        group = read_group(torchrun);
      }
    }
  }
  XTRAIN_CHECK(group.local_rank < group.size || group.launcher == "flags", "local rank ",
               group.local_rank, " is not below the job's size ", group.size);
  group.rendezvous = directory;
  return group;
}

}  // namespace xtrain
