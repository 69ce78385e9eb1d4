// How busy the other processes keep the CPUs this process may run on, from
// the kernel's tick counters: /proc/stat (per CPU: user, nice, system, idle,
// iowait, irq, softirq, steal, ...) and /proc/self/stat (this process's
// utime and stime), both in clock ticks (USER_HZ).
//
// Between two readings, the other processes' share of our CPUs is
//   (busy ticks of those CPUs - this process's ticks) / (elapsed ticks per CPU)
// in CPUs (0.5: half a CPU's worth of work). Our own threads, spinning or
// computing, are subtracted, so the figure does not depend on what we do.
// Idle and iowait count as idle; steal (the hypervisor running others on our
// CPU) counts as busy: it is a neighbour too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xtrain {

// One reading of the counters, restricted to the CPUs in `cpus`.
struct CpuTicks {
  std::uint64_t busy = 0;   // over those CPUs
  std::uint64_t total = 0;  // over those CPUs
  int cpus = 0;             // how many of them /proc/stat listed
  std::uint64_t own = 0;    // this process, utime + stime
};

// The per-CPU lines ("cpu0 ...") of /proc/stat text, summed over the CPUs
// whose numbers are in `cpus`. Throws xtrain::Error naming the line when
// one is malformed.
CpuTicks parse_proc_stat(const std::string& text, const std::vector<int>& cpus);

// utime + stime (fields 14 and 15) of /proc/<pid>/stat text; the command name
// (field 2) may hold spaces and parentheses. Throws xtrain::Error when the
// fields are missing.
std::uint64_t parse_process_ticks(const std::string& text);

// The other processes' average use of our CPUs between two readings, in
// CPUs, clamped to [0, cpus]; 0 when no time passed.
double neighbour_cpus(const CpuTicks& before, const CpuTicks& after);

// What the other processes take from `threads` threads of ours on `cpus`
// CPUs when they use `neighbours` CPUs: what they use beyond the
// cpus - threads that our threads leave them, 0 at least.
double cpus_taken_from_threads(double neighbours, int cpus, int threads);

// A count of CPUs for the log: "0.83".
std::string format_cpus(double cpus);

// The CPUs this process may run on (its affinity mask).
std::vector<int> allowed_cpus();

// A reading of this machine now: /proc/stat and /proc/self/stat. Throws
// xtrain::Error when they cannot be read (no /proc).
CpuTicks read_cpu_ticks(const std::vector<int>& cpus);

}  // namespace xtrain
