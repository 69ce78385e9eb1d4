// adapt_openmp_waiting_to_load: the spin count of core/openmp_spin.hpp,
// chosen at start and rechecked by a monitor thread.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "core/cpu_load.hpp"
#include "core/openmp_spin.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

constexpr auto kFirstWindow = std::chrono::milliseconds(100);
constexpr auto kRecheckPeriod = std::chrono::seconds(2);

std::string user_setting() {
  return user_openmp_wait_setting([](const char* name) { return std::getenv(name); });
}

// Rechecks the load every kRecheckPeriod until destroyed (at exit).
class SpinMonitor {
 public:
  SpinMonitor(std::uint64_t* spin_count, std::vector<int> cpus, int threads, CpuTicks last,
              SpinLength length)
      : spin_count_(spin_count),
        cpus_(std::move(cpus)),
        threads_(threads),
        last_(last),
        length_(length),
        thread_([this] { run(); }) {}
  ~SpinMonitor() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  SpinMonitor(const SpinMonitor&) = delete;
  SpinMonitor& operator=(const SpinMonitor&) = delete;

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, kRecheckPeriod, [this] { return stopping_; })) {
      CpuTicks now;
      try {
        now = read_cpu_ticks(cpus_);
      } catch (const Error&) {
        return;  // /proc went away: keep the last choice
      }
      length_ = choose_spin_length(length_, neighbour_cpus(last_, now), now.cpus, threads_);
      set_libgomp_spin_count(spin_count_, spin_polls(length_));
      last_ = now;
    }
  }

  std::uint64_t* const spin_count_;
  const std::vector<int> cpus_;
  const int threads_;
  CpuTicks last_;
  SpinLength length_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after everything it reads
};

std::string start_adapting() {
  const std::string user = user_setting();
  if (!user.empty()) {
    return user +
           " in the environment: libgomp waits as that says (without OMP_WAIT_POLICY and "
           "GOMP_SPINCOUNT, xtrain chooses from the load)";
  }
  std::uint64_t* const spin_count = libgomp_spin_count();
  if (spin_count == nullptr) {
    // The xtrain tool has started again with GOMP_SPINCOUNT set before it
    // gets here (tools/xtrain/main.cpp); a library user or Python cannot.
    return "this process's OpenMP runtime has no spin count that can be changed while it runs "
           "(not Debian's libgomp?), so idle threads wait as its defaults say; set "
           "OMP_WAIT_POLICY or GOMP_SPINCOUNT (e.g. 1000, a short spin) before it is loaded to "
           "choose";
  }
  const std::vector<int> cpus = allowed_cpus();
  const int threads = cpu_threads();
  CpuTicks before, after;
  try {
    before = read_cpu_ticks(cpus);
    std::this_thread::sleep_for(kFirstWindow);
    after = read_cpu_ticks(cpus);
  } catch (const Error& error) {
    set_libgomp_spin_count(spin_count, kShortSpin);
    return "a short spin (" + std::to_string(kShortSpin) + " polls) throughout: " + error.what();
  }
  const double neighbours = neighbour_cpus(before, after);
  const SpinLength length = choose_spin_length(SpinLength::kShort, neighbours, after.cpus, threads);
  set_libgomp_spin_count(spin_count, spin_polls(length));
  static std::unique_ptr<SpinMonitor> monitor;
  monitor = std::make_unique<SpinMonitor>(spin_count, cpus, threads, after, length);
  return "other processes used " + format_cpus(neighbours) + " of this process's " +
         std::to_string(after.cpus) + " CPUs, so idle threads poll " +
         std::to_string(spin_polls(length)) + " times before sleeping (" + std::to_string(kLongSpin) +
         " while the others leave our " + std::to_string(threads) + " threads their CPUs, " +
         std::to_string(kShortSpin) + " while they take them, " + std::to_string(kNoSpin) +
         " while they take more than a whole CPU; rechecked every " +
         std::to_string(kRecheckPeriod.count()) +
         " s; set OMP_WAIT_POLICY or GOMP_SPINCOUNT to choose yourself)";
}

}  // namespace

std::string adapt_openmp_waiting_to_load() {
  static const std::string line = start_adapting();
  return line;
}

bool openmp_waiting_adaptable() {
  return user_setting().empty() && libgomp_spin_count() != nullptr;
}

}  // namespace xtrain
