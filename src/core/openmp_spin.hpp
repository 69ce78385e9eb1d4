// How idle OpenMP threads wait: libgomp's spin count, following the load.
//
// An idle libgomp thread polls for new work `spin count` times before it
// sleeps in the kernel. Long polling starts each parallel region at once on
// a machine of one's own; beside busy neighbours the polling threads take
// their cores, and ours wait for them in turn (docs/performance.md, "The
// OpenMP wait policy": LeNet 4 ms quiet with any spin, 11 ms with a short
// spin and 64-83 ms with libgomp's default beside a busy build). So, unless
// the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT, which always win), the
// count is long while the other processes leave our CPUs idle and short
// while they do not, measured at start and rechecked every few seconds.
//
// libgomp reads its settings once, when it is loaded, into a variable that
// it reads again before every wait but exports no way to change. We find
// that variable by its value (libgomp's documented default, 300000, which
// it holds when neither setting is given) in libgomp's writable data: one
// 8-byte word. Where it is not found exactly once (another OpenMP runtime, a
// libgomp with another default), nothing is written and the tool falls back
// to a short spin from the start (tools/xtrain/main.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xtrain {

// libgomp's spin count when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set.
constexpr std::uint64_t kLibgompDefaultSpin = 300000;
// While the other CPUs are idle: libgomp's default (the same as PyTorch's),
// ~4 ms of polling on an Intel Xeon with AVX-512 (13 ns per PAUSE). Longer
// (OMP_WAIT_POLICY=active) gave no faster LeNet there.
constexpr std::uint64_t kLongSpin = kLibgompDefaultSpin;
// While neighbours keep them busy: ~13 us there. 0 (passive) was as good
// beside one busy process and slower on a quiet machine.
constexpr std::uint64_t kShortSpin = 1000;
// While the neighbours take more than a whole CPU from our threads: no spin
// (libgomp's passive). Beside five or more runnable processes per CPU, LeNet
// took 19.9 ms passive against 30.0 with the short spin (docs/performance.md).
constexpr std::uint64_t kNoSpin = 0;

// "OMP_WAIT_POLICY=active" (or GOMP_SPINCOUNT, or both) when the user set
// either, as `lookup` (getenv, or a fake in tests) finds them; "" if neither.
std::string user_openmp_wait_setting(const std::function<const char*(const char*)>& lookup);

enum class SpinLength { kNone, kShort, kLong };

// The spin for the next few seconds, from the other processes' use of our
// CPUs (`neighbours`, in CPUs: neighbour_cpus in core/cpu_load.hpp), how many
// CPUs we may use and how many threads our pool runs. Our threads leave
// cpus - threads CPUs to the others; what they use beyond that is taken from
// our threads. Spin long when it is at most a quarter of a CPU; once long,
// stay long until it passes half a CPU. Spin not at all when it is more than
// a whole CPU; once so, until it falls to three quarters. Short in between.
// (The margins keep a reading near a limit from switching at every check.)
SpinLength choose_spin_length(SpinLength current, double neighbours, int cpus, int threads);

// The polls of each length: kNoSpin, kShortSpin, kLongSpin.
std::uint64_t spin_polls(SpinLength length);

// Whether a loaded library's path names libgomp: Debian's "libgomp.so.1", or
// the copy a Python wheel carries under the name auditwheel gives it
// ("xtrain.libs/libgomp-f9a9ad78.so.1.0.0").
bool is_libgomp_file(const std::string& path);

// The 8-byte-aligned words in [begin, end) that hold `value`.
std::vector<std::uint64_t*> find_words(void* begin, void* end, std::uint64_t value);

// The address of libgomp's spin count, found as above, or null. Call it only
// when the user set neither variable. Searched once; later calls return the
// first answer.
std::uint64_t* libgomp_spin_count();

// Sets it (from any thread: an aligned 8-byte store, which libgomp's threads
// read before each wait).
void set_libgomp_spin_count(std::uint64_t* spin_count, std::uint64_t polls);

}  // namespace xtrain
