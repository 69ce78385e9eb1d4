// The CPU's FP32 peak, measured: GFLOP/s of fused multiply-adds on
// independent register chains, with AVX-512 and with AVX2, on 1 thread and
// on N threads. It is the denominator of "% of peak" in bench/cpu_nets.py.
//
//   bench/fma_peak.sh                      table: every ISA x {1, N} threads
//   bench/fma_peak.sh --isa avx2 --threads 2   just that one number (scripts)
// The figure is per CPU-second (times the threads), which stays the
// silicon's on a shared machine; the table adds the wall-clock figure.
//   options: --isa avx2|avx512|native  --threads N (default: OpenMP's count)
//            --reps R (default 7; the median is printed)  --seconds S per rep
//
// XTRAIN_MAX_CPU_ISA=avx2 caps the ISA as it caps the library's kernels:
// "native" then means AVX2, and asking for avx512 is an error.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// The loops over the chains are unrolled (#pragma GCC unroll): rolled, GCC
// keeps acc[] in memory and the chains run at store-forwarding speed.
// Enough independent accumulators to hide the FMA latency (4 cycles on
// Zen 3/4/5 and recent Intel) at two FMAs per cycle: 8 needed, 12 leaves a
// margin and still fits AVX2's 16 registers beside the two operands.
constexpr int kChains = 12;

// acc = acc * a + b converges to b / (1 - a) without overflow or
// denormals, so the speed does not depend on the values.
__attribute__((target("avx512f"), noinline)) float run_avx512(long iterations) {
  __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  __m512 acc[kChains];
#pragma GCC unroll 16
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 sum = acc[0];
#pragma GCC unroll 16
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;  // used by the caller: nothing is dead code
}

__attribute__((target("avx2,fma"), noinline)) float run_avx2(long iterations) {
  __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  __m256 acc[kChains];
#pragma GCC unroll 16
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 sum = acc[0];
#pragma GCC unroll 16
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

struct Isa {
  const char* name;
  int floats_per_vector;
  float (*run)(long);
};
const Isa kAvx512{"avx512", 16, run_avx512};
const Isa kAvx2{"avx2", 8, run_avx2};

std::string lower(const char* text) {
  std::string result = text ? text : "";
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

// The ISAs this CPU runs, best first, under XTRAIN_MAX_CPU_ISA's cap.
std::vector<const Isa*> usable_isas() {
  std::string cap = lower(std::getenv("XTRAIN_MAX_CPU_ISA"));
  if (!cap.empty() && cap != "avx2" && cap.rfind("avx512", 0) != 0 && cap != "native") {
    std::fprintf(stderr, "fma_peak: XTRAIN_MAX_CPU_ISA=%s not understood (avx2, avx512, native)\n",
                 cap.c_str());
    std::exit(2);
  }
  std::vector<const Isa*> isas;
  if (cap != "avx2" && __builtin_cpu_supports("avx512f")) isas.push_back(&kAvx512);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isas.push_back(&kAvx2);
  return isas;
}

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// GFLOP/s of one burst on `threads` threads at once, by the wall clock and
// per CPU-second of the process times the thread count. They agree on an
// idle machine; when other processes take turns on the cores the wall
// figure drops and the CPU-time one still measures the silicon.
struct Rate {
  double wall, cpu;
};

Rate measure_once(const Isa& isa, int threads, long iterations) {
  double cpu_start = process_cpu_seconds();
  auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    float result = isa.run(iterations);
    if (result == -1.0f) std::printf("!");  // never true; keeps the work alive
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cpu = process_cpu_seconds() - cpu_start;
  double gflop = 2.0 * isa.floats_per_vector * kChains * static_cast<double>(iterations) *
                 threads / 1e9;
  return {gflop / wall, gflop / (cpu / threads)};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Rate median_rate(const Isa& isa, int threads, int reps, double seconds_per_rep) {
  // Size the burst from a short probe, so a rep takes about seconds_per_rep
  // whatever the clock (thread start-up is then negligible).
  long probe = 1 << 20;
  double probe_gflops = measure_once(isa, 1, probe).cpu;
  double flops_per_iteration = 2.0 * isa.floats_per_vector * kChains;
  long iterations = std::max(probe, static_cast<long>(probe_gflops * 1e9 * seconds_per_rep /
                                                      flops_per_iteration));
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    Rate rate = measure_once(isa, threads, iterations);
    wall.push_back(rate.wall);
    cpu.push_back(rate.cpu);
  }
  return {median(wall), median(cpu)};
}

[[noreturn]] void usage(const char* problem, int status = 2) {
  std::fprintf(status ? stderr : stdout,
               "fma_peak: %s\nusage: fma_peak [--isa avx2|avx512|native] [--threads N] "
               "[--reps R] [--seconds S]\n",
               problem);
  std::exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  std::string isa_name;
  int threads = 0, reps = 7;
  double seconds = 0.1;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") usage("the FP32 FMA peak in GFLOP/s (see the top of bench/fma_peak.cpp)", 0);
    if (i + 1 >= argc) usage(("missing value after " + flag).c_str());
    const char* value = argv[++i];
    if (flag == "--isa") isa_name = lower(value);
    else if (flag == "--threads") threads = std::atoi(value);
    else if (flag == "--reps") reps = std::atoi(value);
    else if (flag == "--seconds") seconds = std::atof(value);
    else usage(("unknown option " + flag).c_str());
  }
  if (reps < 1 || seconds <= 0 || threads < 0) usage("--reps, --seconds and --threads must be positive");
  std::vector<const Isa*> isas = usable_isas();
  if (isas.empty()) usage("this CPU has neither AVX-512 nor AVX2 with FMA");
  int all_threads = threads > 0 ? threads : omp_get_max_threads();

  if (!isa_name.empty()) {  // one number, for scripts
    const Isa* chosen = isa_name == "native" ? isas.front() : nullptr;
    for (const Isa* isa : isas) {
      if (isa_name == isa->name) chosen = isa;
    }
    if (chosen == nullptr) usage(("ISA " + isa_name + " not available here (or capped)").c_str());
    Rate rate = median_rate(*chosen, all_threads, reps, seconds);
    if (rate.wall < 0.9 * rate.cpu) {
      std::fprintf(stderr, "fma_peak: other processes share the cores (wall-clock %.1f GFLOP/s)\n",
                   rate.wall);
    }
    std::printf("%.1f\n", rate.cpu);
    return 0;
  }
  std::printf("FP32 FMA peak, GFLOP/s per CPU-second x threads (by the wall clock), median of\n"
              "%d reps of ~%.2f s, %d independent FMA chains per thread\n",
              reps, seconds, kChains);
  std::vector<int> thread_counts{1};
  if (all_threads > 1) thread_counts.push_back(all_threads);
  for (const Isa* isa : isas) {
    std::printf("%-7s", isa->name);
    for (int count : thread_counts) {
      Rate rate = median_rate(*isa, count, reps, seconds);
      std::printf("  %2d thread%s: %6.1f (%6.1f)", count, count > 1 ? "s" : " ", rate.cpu,
                  rate.wall);
    }
    std::printf("\n");
  }
  return 0;
}
