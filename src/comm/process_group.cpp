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

}  // namespace xtrain
