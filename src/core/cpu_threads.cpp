#include "xtrain/cpu_threads.hpp"

#include <cblas.h>
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <string>

#include "core/channel_blocked_layout.hpp"
#include "core/cpu_isa.hpp"
#include "xtrain/error.hpp"

#ifdef XTRAIN_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace xtrain {
namespace {

int cpus_available() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return omp_get_num_procs();
}

// The pool size OpenMP chose before anyone changed it: OMP_NUM_THREADS or
// the CPUs available. Read once, at the first call, before set_cpu_threads.
int default_cpu_threads() {
  static const int threads = omp_get_max_threads();
  return threads;
}

std::string blas_description() {
  std::string config = openblas_get_config();
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64" -> "OpenBLAS 0.3.21"
  const auto second_space = config.find(' ', config.find(' ') + 1);
  std::string text = config.substr(0, second_space);
  switch (openblas_get_parallel()) {
    case OPENBLAS_SEQUENTIAL:
      return text + " (sequential build)";
    case OPENBLAS_OPENMP:
      return text + " (OpenMP build, same pool)";
    default:
      return text + " (pthreads build: its own " + std::to_string(openblas_get_num_threads()) +
             " threads; install libopenblas0-openmp and rebuild to share one pool)";
  }
}

}  // namespace

void set_cpu_threads(int threads) {
  XTRAIN_CHECK(threads >= 0, "the thread count must be 0 (the default) or more, not ", threads);
  // The tools' first call into us: XTRAIN_MAX_CPU_ISA caps oneDNN before it
  // starts (and a wrong value is reported before anything else happens).
  cpu_isa();
  const int count = threads == 0 ? default_cpu_threads() : threads;
  default_cpu_threads();  // remember the default before changing it
  omp_set_num_threads(count);
  // The OpenMP build follows omp_set_num_threads; the pthreads build keeps its
  // own count, which must match so the two never run more threads than cores.
  openblas_set_num_threads(count);
}

int cpu_threads() { return omp_get_max_threads(); }

std::string cpu_thread_summary() {
  std::string text = std::to_string(cpu_threads()) + " threads (of " +
                     std::to_string(cpus_available()) + " CPUs available), one OpenMP pool";
  for (const char* setting : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    const char* value = std::getenv(setting);
    if (value != nullptr) text += std::string(", ") + setting + "=" + value;
  }
  text += "; BLAS: " + blas_description();
#ifdef XTRAIN_HAVE_ONEDNN
  const dnnl_version_t* version = dnnl_version();
  text += "; oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) +
          "." + std::to_string(version->patch) + " at " + cpu_isa_name(onednn_cpu_isa());
#else
  text += "; oneDNN not built in";
#endif
  text += "; xtrain kernels: " + cpu_isa_summary() + ", channel blocks of " +
          std::to_string(channel_block());
  return text;
}

}  // namespace xtrain
