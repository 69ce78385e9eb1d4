// The CPU's arithmetic peak, measured: GFLOP/s of multiply-adds on
// independent register chains, per number format ("kind") and ISA, on 1
// thread and on N threads. It is the denominator of "% of peak" in
// bench/cpu_nets.py.
//
//   bench/fma_peak.sh                           table: every kind and ISA x {1, N} threads
//   bench/fma_peak.sh --isa avx2 --threads 2    one number (scripts): FP32 at that ISA
//   bench/fma_peak.sh --kind bf16 --threads 2   one number: that kind at its best ISA
// The figure is per CPU-second (times the threads), which stays the
// silicon's on a shared machine; the table adds the wall-clock figure.
//   options: --kind fp32|bf16|fp16|amx_bf16 (default fp32)
//            --isa avx2|avx512|native (fp32 only has an AVX2 form; default native)
//            --threads N (default: OpenMP's count)
//            --reps R (default 7; the median is printed)  --seconds S per rep
//
// The kinds, and the FLOPs one instruction counts:
//   fp32      vfmadd231ps: a*b+c per fp32 lane, 2 FLOPs a lane (32 for a zmm, 16 for a ymm)
//   bf16      vdpbf16ps zmm (AVX512-BF16): each fp32 lane adds the dot product of two bf16
//             pairs, 4 FLOPs a lane, 64 an instruction
//   fp16      vfmadd231ph zmm (AVX512-FP16): 32 fp16 lanes, 64 FLOPs an instruction
//   amx_bf16  tdpbf16ps (AMX-BF16): a 16x16 fp32 tile += a 16x32 bf16 tile times a
//             32x16 one (stored as 16 rows of 16 bf16 pairs), 2*16*16*32 = 16384 FLOPs
// A kind's FLOPs per instruction is not its speed: a CPU may issue vdpbf16ps
// at half the rate of vfmadd231ps (measure; do not assume the 2x).
//
// A kind this CPU (or, for AMX, Linux) cannot run is an error naming what is
// missing: exit status 1 (2 for a usage error); the table lists it as not
// measured. The binary runs on any x86-64: each kernel carries its own target
// attribute and runs only after the CPU has been asked (cpuid).
//
// XTRAIN_MAX_CPU_ISA caps the ISA as it caps the library's kernels: avx2
// leaves only FP32 on AVX2 ("native" then means AVX2, and asking for avx512
// is an error); avx512 caps oneDNN at avx512_core, which has neither the
// bf16/fp16 instructions nor AMX, so it leaves only FP32.
#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

// The loops over the chains are unrolled (#pragma GCC unroll): rolled, GCC
// keeps acc[] in memory and the chains run at store-forwarding speed.
// Enough independent accumulators to hide the FMA latency (4 cycles on
// Zen 3/4/5 and recent Intel) at two FMAs per cycle: 8 needed, 12 leaves a
// margin and still fits AVX2's 16 registers beside the two operands.
constexpr int kChains = 12;
// The AVX-512-only kernels have 32 registers: 16 chains. vdpbf16ps
// saturates with 4 on Sapphire Rapids (it issues every other cycle), and
// vfmadd231ph reads ~3% higher with 16 than with 12.
constexpr int kWideChains = 16;

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

// acc += a[2i] * b[2i] + a[2i+1] * b[2i+1] with every bf16 at 2^-10: each
// lane grows by 2^-19 per instruction and stops growing (rounding) near 32,
// far from overflow, never denormal.
__attribute__((target("avx512bf16,avx512f"), noinline)) float run_bf16(long iterations) {
  const __m512 tiny = _mm512_set1_ps(1.0f / 1024);
  const __m512bh a = _mm512_cvtne2ps_pbh(tiny, tiny);
  __m512 acc[kWideChains];
#pragma GCC unroll 32
  for (int c = 0; c < kWideChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 32
    for (int c = 0; c < kWideChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, a);
  }
  __m512 sum = acc[0];
#pragma GCC unroll 32
  for (int c = 1; c < kWideChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

// As run_avx512 in fp16: a = 1 - 2^-11 and b = 2^-10 (both exact in fp16)
// converge to 2.
__attribute__((target("avx512fp16,avx512f"), noinline)) float run_fp16(long iterations) {
  const __m512h a = _mm512_set1_ph(static_cast<_Float16>(1.0f - 1.0f / 2048));
  const __m512h b = _mm512_set1_ph(static_cast<_Float16>(1.0f / 1024));
  __m512h acc[kWideChains];
#pragma GCC unroll 32
  for (int c = 0; c < kWideChains; ++c) acc[c] = _mm512_set1_ph(static_cast<_Float16>(c));
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 32
    for (int c = 0; c < kWideChains; ++c) acc[c] = _mm512_fmadd_ph(acc[c], a, b);
  }
  __m512h sum = acc[0];
#pragma GCC unroll 32
  for (int c = 1; c < kWideChains; ++c) sum = _mm512_add_ph(sum, acc[c]);
  alignas(64) _Float16 lanes[32];
  _mm512_store_ph(lanes, sum);
  float total = 0;
  for (_Float16 lane : lanes) total += static_cast<float>(lane);
  return total;
}

// AMX: the tile configuration of LDTILECFG (palette 1): 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

constexpr int kTileRows = 16, kTileBytesPerRow = 64;  // the largest tile: 1 KiB
// tdpbf16ps C(16x16 fp32) += A(16 rows x 32 bf16) * B(16 rows x 16 bf16 pairs)
constexpr double kFlopsPerTileProduct = 2.0 * 16 * 16 * 32;
constexpr int kAccumulatorTiles = 4;  // tmm0-3 += {tmm4, tmm5} x {tmm6, tmm7}: oneDNN's 2x2

// Tiles 0-3 accumulate (fp32), 4-5 are the A operands, 6-7 the B ones, all
// 16 rows of 64 bytes; the bf16 values are 2^-10 (0x3A80), so each fp32
// element grows by 32 * 2^-20 per product. GCC 12's _tile_loadconfig tells
// the compiler it reads 8 bytes and _tile_loadd that it reads none, so the
// stores before them may be dropped or sunk (a SIGILL from a zeroed
// configuration): the configuration is an asm operand whole, and a memory
// clobber orders the operand stores before the tile loads.
__attribute__((target("amx-tile,amx-bf16"), noinline)) float run_amx_bf16(long iterations) {
  TileConfig config;
  for (int tile = 0; tile < 8; ++tile) {
    config.rows[tile] = kTileRows;
    config.bytes_per_row[tile] = kTileBytesPerRow;
  }
  alignas(64) std::uint16_t operand[kTileRows * kTileBytesPerRow / 2];
  for (std::uint16_t& value : operand) value = 0x3A80;  // bf16 2^-10
  alignas(64) float result[kTileRows * kTileBytesPerRow / 4];
  asm volatile("ldtilecfg %0" ::"m"(config));
  asm volatile("" ::: "memory");
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, kTileBytesPerRow);
  _tile_loadd(5, operand, kTileBytesPerRow);
  _tile_loadd(6, operand, kTileBytesPerRow);
  _tile_loadd(7, operand, kTileBytesPerRow);
  for (long i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float total = 0;
  _tile_stored(0, result, kTileBytesPerRow);
  for (float value : result) total += value;
  _tile_stored(3, result, kTileBytesPerRow);
  for (float value : result) total += value;
  _tile_release();
  return total;
}

std::string lower(const char* text) {
  std::string result = text ? text : "";
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

// XTRAIN_MAX_CPU_ISA, lower case ("" when unset), checked.
std::string isa_cap() {
  std::string cap = lower(std::getenv("XTRAIN_MAX_CPU_ISA"));
  if (!cap.empty() && cap != "avx2" && cap.rfind("avx512", 0) != 0 && cap != "native") {
    std::fprintf(stderr, "fma_peak: XTRAIN_MAX_CPU_ISA=%s not understood (avx2, avx512, native)\n",
                 cap.c_str());
    std::exit(2);
  }
  return cap == "native" ? "" : cap;
}

// Linux (5.16 and later) hands out AMX's 8 KiB of tile state only to a
// process that asks: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA),
// process-wide. Without it the first tile instruction dies of SIGILL.
// "" when granted, else why not.
std::string request_amx_permission() {
  constexpr int kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    return std::string(
               "Linux refused the AMX tile state (arch_prctl(ARCH_REQ_XCOMP_PERM, "
               "XFEATURE_XTILEDATA): ") +
           std::strerror(errno) + "; Linux 5.16 or later grants it)";
  }
  unsigned long features = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &features) != 0 ||
      (features & (1ul << kXfeatureXtiledata)) == 0) {
    return "Linux did not grant the AMX tile state (ARCH_GET_XCOMP_PERM)";
  }
  return "";
}

struct Kernel {
  const char* kind;         // --kind
  const char* isa;          // --isa it answers to
  const char* instruction;  // what it times
  double flops_per_iteration;
  float (*run)(long);
  std::string unavailable;  // "" when it can run here, else why not
};

// Every kernel, best ISA first within a kind, each with why it cannot run
// here (if it cannot).
std::vector<Kernel> kernels() {
  const std::string cap = isa_cap();
  const std::string capped = "capped by XTRAIN_MAX_CPU_ISA=" + cap;
  const std::string capped_below_bf16 =
      cap == "avx2" ? capped
                    : capped + " (xtrain then caps oneDNN at avx512_core: no bf16, fp16 or AMX)";
  std::vector<Kernel> all;
  all.push_back({"fp32", "avx512", "vfmadd231ps zmm", 2.0 * 16 * kChains, run_avx512, ""});
  if (!__builtin_cpu_supports("avx512f")) {
    all.back().unavailable = "this CPU has no AVX-512 (cpuid: avx512f)";
  } else if (cap == "avx2") {
    all.back().unavailable = capped;
  }
  all.push_back({"fp32", "avx2", "vfmadd231ps ymm", 2.0 * 8 * kChains, run_avx2, ""});
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    all.back().unavailable = "this CPU has no AVX2 with FMA (cpuid: avx2, fma)";
  }
  all.push_back({"bf16", "avx512", "vdpbf16ps zmm", 4.0 * 16 * kWideChains, run_bf16, ""});
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) {
    all.back().unavailable = "this CPU has no AVX512-BF16 (cpuid: avx512_bf16)";
  } else if (!cap.empty()) {
    all.back().unavailable = capped_below_bf16;
  }
  all.push_back({"fp16", "avx512", "vfmadd231ph zmm", 2.0 * 32 * kWideChains, run_fp16, ""});
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512fp16")) {
    all.back().unavailable = "this CPU has no AVX512-FP16 (cpuid: avx512_fp16)";
  } else if (!cap.empty()) {
    all.back().unavailable = capped_below_bf16;
  }
  all.push_back({"amx_bf16", "amx", "tdpbf16ps 16x16x32", kFlopsPerTileProduct * kAccumulatorTiles,
                 run_amx_bf16, ""});
  if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) {
    all.back().unavailable = "this CPU has no AMX-BF16 (cpuid: amx_tile, amx_bf16)";
  } else if (!cap.empty()) {
    all.back().unavailable = capped_below_bf16;
  } else {
    all.back().unavailable = request_amx_permission();
  }
  return all;
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

Rate measure_once(const Kernel& kernel, int threads, long iterations) {
  double cpu_start = process_cpu_seconds();
  auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    float result = kernel.run(iterations);
    if (result == -1.0f) std::printf("!");  // never true; keeps the work alive
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cpu = process_cpu_seconds() - cpu_start;
  double gflop = kernel.flops_per_iteration * static_cast<double>(iterations) * threads / 1e9;
  return {gflop / wall, gflop / (cpu / threads)};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Rate median_rate(const Kernel& kernel, int threads, int reps, double seconds_per_rep) {
  // Size the burst from a short probe, so a rep takes about seconds_per_rep
  // whatever the clock (thread start-up is then negligible).
  long probe = 1 << 20;
  double probe_gflops = measure_once(kernel, 1, probe).cpu;
  long iterations = std::max(
      probe, static_cast<long>(probe_gflops * 1e9 * seconds_per_rep / kernel.flops_per_iteration));
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    Rate rate = measure_once(kernel, threads, iterations);
    wall.push_back(rate.wall);
    cpu.push_back(rate.cpu);
  }
  return {median(wall), median(cpu)};
}

[[noreturn]] void usage(const std::string& problem, int status = 2) {
  std::fprintf(status ? stderr : stdout,
               "fma_peak: %s\nusage: fma_peak [--kind fp32|bf16|fp16|amx_bf16] "
               "[--isa avx2|avx512|native] [--threads N] [--reps R] [--seconds S]\n",
               problem.c_str());
  std::exit(status);
}

// The kernel --kind and --isa name, or exit saying why there is none.
const Kernel& choose(const std::vector<Kernel>& all, const std::string& kind,
                     const std::string& isa) {
  const Kernel* unavailable = nullptr;
  std::string isas;
  for (const Kernel& kernel : all) {
    if (kind != kernel.kind) continue;
    isas += std::string(isas.empty() ? "" : ", ") + kernel.isa;
    if (isa != "native" && isa != kernel.isa) continue;
    if (kernel.unavailable.empty()) return kernel;
    if (unavailable == nullptr) unavailable = &kernel;
  }
  if (isas.empty()) usage("unknown --kind " + kind + " (fp32, bf16, fp16, amx_bf16)");
  if (unavailable == nullptr) {
    usage("--kind " + kind + " has no " + isa + " form (" + isas + " only)");
  }
  std::fprintf(stderr, "fma_peak: --kind %s (%s) cannot run here: %s\n", kind.c_str(),
               unavailable->instruction, unavailable->unavailable.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string kind_name, isa_name;
  int threads = 0, reps = 7;
  double seconds = 0.1;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      usage("peak GFLOP/s per number format (see the top of bench/fma_peak.cpp)", 0);
    }
    if (i + 1 >= argc) usage("missing value after " + flag);
    const char* value = argv[++i];
    if (flag == "--kind") {
      kind_name = lower(value);
    } else if (flag == "--isa") {
      isa_name = lower(value);
    } else if (flag == "--threads") {
      threads = std::atoi(value);
    } else if (flag == "--reps") {
      reps = std::atoi(value);
    } else if (flag == "--seconds") {
      seconds = std::atof(value);
    } else {
      usage("unknown option " + flag);
    }
  }
  if (reps < 1 || seconds <= 0 || threads < 0) {
    usage("--reps, --seconds and --threads must be positive");
  }
  if (!isa_name.empty() && isa_name != "native" && isa_name != "avx2" && isa_name != "avx512") {
    usage("unknown --isa " + isa_name + " (avx2, avx512, native)");
  }
  const std::vector<Kernel> all = kernels();
  int all_threads = threads > 0 ? threads : omp_get_max_threads();

  if (!isa_name.empty() || !kind_name.empty()) {  // one number, for scripts
    const Kernel& chosen =
        choose(all, kind_name.empty() ? "fp32" : kind_name, isa_name.empty() ? "native" : isa_name);
    Rate rate = median_rate(chosen, all_threads, reps, seconds);
    if (rate.wall < 0.9 * rate.cpu) {
      std::fprintf(stderr, "fma_peak: other processes share the cores (wall-clock %.1f GFLOP/s)\n",
                   rate.wall);
    }
    std::printf("%.1f\n", rate.cpu);
    return 0;
  }
  std::printf(
      "Peak GFLOP/s per CPU-second x threads (by the wall clock), median of %d reps of ~%.2f s;\n"
      "%d independent chains per thread (AVX2 and FP32 AVX-512), %d (bf16, fp16), %d AMX "
      "accumulator tiles\n",
      reps, seconds, kChains, kWideChains, kAccumulatorTiles);
  std::vector<int> thread_counts{1};
  if (all_threads > 1) thread_counts.push_back(all_threads);
  std::vector<const Kernel*> skipped;
  for (const Kernel& kernel : all) {
    if (!kernel.unavailable.empty()) {
      skipped.push_back(&kernel);
      continue;
    }
    std::printf("%-8s %-6s %-18s", kernel.kind, kernel.isa, kernel.instruction);
    for (int count : thread_counts) {
      Rate rate = median_rate(kernel, count, reps, seconds);
      std::printf("  %2d thread%s: %7.1f (%7.1f)", count, count > 1 ? "s" : " ", rate.cpu,
                  rate.wall);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  for (const Kernel* kernel : skipped) {
    std::printf("not measured: %s %s (%s): %s\n", kernel->kind, kernel->isa, kernel->instruction,
                kernel->unavailable.c_str());
  }
  return 0;
}
