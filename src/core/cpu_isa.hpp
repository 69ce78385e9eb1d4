// Which x86 vector instruction set xtrain's own CPU kernels use, and the
// XTRAIN_MAX_CPU_ISA cap on it.
//
// The kernels that need more than the x86-64 baseline (SSE2) are compiled
// once per level, each copy in a function with GCC's target attribute, and
// picked at run time by cpu_isa(): the best level this CPU supports, capped
// by XTRAIN_MAX_CPU_ISA (avx2 or avx512), read once. The cap works like
// ONEDNN_MAX_CPU_ISA for oneDNN and ATEN_CPU_CAPABILITY for PyTorch: one
// machine can measure every level up to its own. When XTRAIN_MAX_CPU_ISA is
// set and ONEDNN_MAX_CPU_ISA is not, oneDNN is capped to the same level, so
// one variable caps both.
#pragma once

#include <optional>
#include <string>

namespace xtrain {

// Ordered: each level contains the ones below it.
enum class CpuIsa {
  kBaseline,  // x86-64 (SSE2), or any other architecture
  kAvx2,      // AVX2 + FMA (x86-64-v3)
  kAvx512,    // AVX-512 F (plus the BW/DQ/VL that every such CPU has)
};

// "baseline", "avx2" or "avx512": the names XTRAIN_MAX_CPU_ISA accepts
// (except "baseline").
const char* cpu_isa_name(CpuIsa isa);

// The best level this CPU (and its operating system) supports.
CpuIsa detected_cpu_isa();

// The cap an XTRAIN_MAX_CPU_ISA value asks for: none for null or "", else
// "avx2" or "avx512" (any case). Throws xtrain::Error naming the accepted
// values for anything else.
std::optional<CpuIsa> parse_cpu_isa_cap(const char* value);

// `detected`, lowered to `cap` when there is one.
CpuIsa capped_cpu_isa(CpuIsa detected, std::optional<CpuIsa> cap);

// The level xtrain's kernels run at: detected_cpu_isa() capped by
// XTRAIN_MAX_CPU_ISA. The first call reads the variable (throwing
// xtrain::Error for an unknown value) and caps oneDNN too (see above), so
// it must come before oneDNN's first primitive: Layer::setup and
// set_cpu_threads (the tools' first call) call it.
CpuIsa cpu_isa();

// For tests, which run every copy of a kernel on one machine: cpu_isa() no
// higher than `cap` from now on (nothing for none). oneDNN is not affected.
void set_cpu_isa_cap_for_testing(std::optional<CpuIsa> cap);

// The level oneDNN's kernels run at, in the same terms (its AVX-512 core
// kernels count as kAvx512), after the cap; cpu_isa() in a build without
// oneDNN.
CpuIsa onednn_cpu_isa();

// Whether oneDNN's kernels on this CPU, after the caps, multiply bfloat16
// in hardware (AVX512-BF16 or AMX-BF16). False without oneDNN.
bool onednn_computes_bfloat16();

// For the start-up log, e.g. "avx2 (capped by XTRAIN_MAX_CPU_ISA=avx2; the
// CPU has avx512)".
std::string cpu_isa_summary();

}  // namespace xtrain
