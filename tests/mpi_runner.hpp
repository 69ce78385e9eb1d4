// Starting MPI jobs from tests: the mpirun command line that works on CI
// machines and in containers, and finding the process of one rank.
#pragma once

#include <dirent.h>
#include <sys/types.h>

#include <fstream>
#include <iterator>
#include <string>

#include "tool_runner.hpp"

namespace xtrain::testing {

inline bool have_mpirun() { return run_tool("command -v mpirun").exit_code == 0; }

// `mpirun` for an n-process job on this machine, under `timeout 120` so that
// a hang fails the test instead of blocking it. For Open MPI:
//  - OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM): containers and CI run tests as root,
//    which mpirun refuses by default;
//  - --oversubscribe: CI machines may have fewer cores than ranks;
//  - --bind-to none: don't pin ranks to cores that other jobs share;
//  - btl_vader_single_copy_mechanism none: the shared-memory transport's
//    cross-process copy (CMA) needs ptrace rights that containers often lack.
// Other MPIs (MPICH's Hydra) take just -n.
inline std::string mpirun(int processes, const std::string& program_and_arguments) {
  const bool open_mpi = run_tool("mpirun --version").output.find("Open MPI") != std::string::npos;
  const std::string n = std::to_string(processes);
  if (!open_mpi) return "timeout 120 mpirun -n " + n + " " + program_and_arguments;
  return "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun "
         "--oversubscribe --bind-to none --mca btl_vader_single_copy_mechanism none -np " +
         n + " " + program_and_arguments;
}

// The process whose command line contains `marker` and whose environment
// says it is Open MPI rank `rank`; -1 if there is none (yet).
inline pid_t find_rank_process(const std::string& marker, int rank) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  while (dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto read_all = [&](const char* file) {
      std::ifstream in("/proc/" + name + "/" + file, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string command = read_all("cmdline");
    if (command.find(marker) == std::string::npos || command.rfind("mpirun", 0) == 0) continue;
    const std::string environment = read_all("environ");
    // Variables are NUL-separated: match a whole entry.
    if (environment.find(std::string(1, '\0') + wanted + '\0') == std::string::npos &&
        environment.rfind(wanted + '\0', 0) != 0) {
      continue;
    }
    found = static_cast<pid_t>(std::stol(name));
    break;
  }
  ::closedir(proc);
  return found;
}

}  // namespace xtrain::testing
