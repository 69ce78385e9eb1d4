#include "core/cpu_load.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path);
  XTRAIN_CHECK(in.good(), "cannot read ", path, " (is /proc mounted?)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CpuTicks parse_proc_stat(const std::string& text, const std::vector<int>& cpus) {
  CpuTicks ticks;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    // "cpu0 ..." per CPU; "cpu  ..." (the sum) and other lines are skipped.
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') {
      continue;
    }
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    fields >> cpu;
    if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    // user nice system idle iowait irq softirq steal [guest guest_nice]:
    // guest time is already inside user (and guest_nice inside nice).
    std::uint64_t value[8] = {};
    for (std::uint64_t& v : value) fields >> v;
    XTRAIN_CHECK(!fields.fail(), "/proc/stat: cannot read the eight tick counts of '", line,
                 "' (user nice system idle iowait irq softirq steal)");
    const std::uint64_t idle = value[3] + value[4];
    const std::uint64_t busy = value[0] + value[1] + value[2] + value[5] + value[6] + value[7];
    ticks.busy += busy;
    ticks.total += busy + idle;
    ++ticks.cpus;
  }
  return ticks;
}

std::uint64_t parse_process_ticks(const std::string& text) {
  // "pid (comm) state ppid ...": the name ends at the last ')'.
  const std::size_t name_end = text.rfind(')');
  XTRAIN_CHECK(name_end != std::string::npos, "/proc/self/stat: no '(name)' in '", text, "'");
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  // After the name: state (3), ppid, pgrp, session, tty_nr, tpgid, flags,
  // minflt, cminflt, majflt, cmajflt (13), utime (14), stime (15).
  for (int number = 3; number <= 13; ++number) fields >> field;
  std::uint64_t utime = 0, stime = 0;
  fields >> utime >> stime;
  XTRAIN_CHECK(!fields.fail(), "/proc/self/stat: no utime and stime (fields 14, 15) in '", text,
               "'");
  return utime + stime;
}

double neighbour_cpus(const CpuTicks& before, const CpuTicks& after) {
  if (after.total <= before.total || after.cpus <= 0) return 0;
  const double elapsed_per_cpu = static_cast<double>(after.total - before.total) / after.cpus;
  const double busy = static_cast<double>(after.busy - before.busy);
  const double own = static_cast<double>(after.own - before.own);
  return std::clamp((busy - own) / elapsed_per_cpu, 0.0, static_cast<double>(after.cpus));
}

double cpus_taken_from_threads(double neighbours, int cpus, int threads) {
  return std::max(0.0, neighbours - std::max(0, cpus - threads));
}

std::string format_cpus(double cpus) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", cpus);
  return text;
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

CpuTicks read_cpu_ticks(const std::vector<int>& cpus) {
  // Our own ticks first, so that a tick of ours landing between the two reads
  // counts as a neighbour's: an error of one tick errs towards yielding.
  const std::uint64_t own = parse_process_ticks(read_whole_file("/proc/self/stat"));
  CpuTicks ticks = parse_proc_stat(read_whole_file("/proc/stat"), cpus);
  ticks.own = own;
  return ticks;
}

}  // namespace xtrain
