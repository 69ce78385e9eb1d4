// The CPU threads that run xtrain's kernels.
//
// oneDNN, OpenBLAS (its OpenMP build, which xtrain links where Debian's
// libopenblas0-openmp is installed) and xtrain's own parallel loops all run
// on one OpenMP thread pool, so they never compete for cores. Its size is
// OMP_NUM_THREADS when set, else the CPUs this process may run on (Slurm's
// and taskset's CPU sets count, not the machine's total).
#pragma once

#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

// Sets the pool's size; 0 restores the default above. Throws xtrain::Error
// for a negative count.
XTRAIN_API void set_cpu_threads(int threads);

// The pool's current size.
XTRAIN_API int cpu_threads();

// One line for the log, e.g. "2 threads (of 2 CPUs available), one OpenMP
// pool; BLAS: OpenBLAS 0.3.21 (OpenMP build); oneDNN 2.6.3". It also says when
// the BLAS library keeps its own threads.
XTRAIN_API std::string cpu_thread_summary();

}  // namespace xtrain
