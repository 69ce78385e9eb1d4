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

// How the pool's idle threads wait for work (docs/performance.md, "The
// OpenMP wait policy"). Unless the user set OMP_WAIT_POLICY or
// GOMP_SPINCOUNT, which always win, they poll long while other processes
// leave this process's CPUs idle, briefly while they keep them busy and not
// at all while they take more than a whole CPU from its threads: measured now (over 0.1 s) and rechecked every 2 s by a thread of ours that
// sleeps in between. Call it after set_cpu_threads (the pool size is part of
// the decision). Returns one line for the log: what was chosen and why.
// Once per process; later calls return the first line.
XTRAIN_API std::string adapt_openmp_waiting_to_load();

// Whether adapt_openmp_waiting_to_load can change the waiting at run time:
// false where the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT, and where the
// OpenMP runtime is not a libgomp whose spin count could be found. The xtrain
// tool, when this is false and the user set nothing, starts itself again with
// GOMP_SPINCOUNT=1000 (the short spin from the start).
XTRAIN_API bool openmp_waiting_adaptable();

}  // namespace xtrain
