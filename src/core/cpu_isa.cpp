#include "core/cpu_isa.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

#ifdef XTRAIN_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace xtrain {
namespace {

constexpr const char* kCapVariable = "XTRAIN_MAX_CPU_ISA";

// set_cpu_isa_cap_for_testing's cap as an int, -1 for none.
std::atomic<int> cap_for_testing{-1};

#ifdef XTRAIN_HAVE_ONEDNN
dnnl::cpu_isa onednn_level(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512:
      return dnnl::cpu_isa::avx512_core;
    case CpuIsa::kAvx2:
      return dnnl::cpu_isa::avx2;
    case CpuIsa::kBaseline:
      break;
  }
  return dnnl::cpu_isa::sse41;
}

// oneDNN reads its own cap once, at its first use, and refuses a new one
// after that: so this runs inside cpu_isa()'s first call.
void cap_onednn(CpuIsa isa) {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") != nullptr || std::getenv("DNNL_MAX_CPU_ISA") != nullptr) {
    return;  // the user capped oneDNN separately
  }
  try {
    dnnl::set_max_cpu_isa(onednn_level(isa));
  } catch (const dnnl::error&) {
    XLOG(WARNING) << kCapVariable << " could not cap oneDNN, which had started already; set "
                  << "ONEDNN_MAX_CPU_ISA as well to cap its convolutions";
  }
}
#endif

// The variable as read once, with what it did to the level.
struct CapSetting {
  std::optional<CpuIsa> cap;
  CpuIsa isa;
};

const CapSetting& cap_setting() {
  static const CapSetting setting = [] {
    const std::optional<CpuIsa> cap = parse_cpu_isa_cap(std::getenv(kCapVariable));
    const CpuIsa isa = capped_cpu_isa(detected_cpu_isa(), cap);
#ifdef XTRAIN_HAVE_ONEDNN
    if (cap) cap_onednn(isa);
#endif
    return CapSetting{cap, isa};
  }();
  return setting;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kBaseline:
      break;
  }
  return "baseline";
}

CpuIsa detected_cpu_isa() {
#if defined(__x86_64__) && defined(__GNUC__)
  // __builtin_cpu_supports also checks that the OS saves the wide registers.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return CpuIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::kAvx2;
#endif
  return CpuIsa::kBaseline;
}

std::optional<CpuIsa> parse_cpu_isa_cap(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  std::string name(value);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "avx2") return CpuIsa::kAvx2;
  if (name == "avx512") return CpuIsa::kAvx512;
  throw Error(detail::concat(kCapVariable, "='", value,
                             "' is not an instruction set xtrain can be capped to: use avx2 or "
                             "avx512, or unset it for the best this CPU supports"));
}

CpuIsa capped_cpu_isa(CpuIsa detected, std::optional<CpuIsa> cap) {
  return cap ? std::min(detected, *cap) : detected;
}

CpuIsa cpu_isa() {
  const int cap = cap_for_testing.load(std::memory_order_relaxed);
  const CpuIsa isa = cap_setting().isa;
  return cap < 0 ? isa : std::min(isa, static_cast<CpuIsa>(cap));
}

void set_cpu_isa_cap_for_testing(std::optional<CpuIsa> cap) {
  cap_for_testing.store(cap ? static_cast<int>(*cap) : -1, std::memory_order_relaxed);
}

CpuIsa onednn_cpu_isa() {
  cpu_isa();  // first, so that XTRAIN_MAX_CPU_ISA caps oneDNN before it starts
#ifdef XTRAIN_HAVE_ONEDNN
  // oneDNN's cpu_isa values are nested bit sets: a level contains the bits
  // of every level below it.
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto contains = [effective](dnnl::cpu_isa level) {
    const auto bits = static_cast<unsigned>(level);
    return (effective & bits) == bits;
  };
  if (contains(dnnl::cpu_isa::avx512_core)) return CpuIsa::kAvx512;
  if (contains(dnnl::cpu_isa::avx2)) return CpuIsa::kAvx2;
  return CpuIsa::kBaseline;
#else
  return cpu_isa();
#endif
}

bool onednn_computes_bfloat16() {
  cpu_isa();  // the caps first, as in onednn_cpu_isa()
#ifdef XTRAIN_HAVE_ONEDNN
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bits = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (effective & bits) == bits;
#else
  return false;
#endif
}

std::string cpu_isa_summary() {
  const CapSetting& setting = cap_setting();
  std::string text = cpu_isa_name(setting.isa);
  if (setting.cap) {
    text += detail::concat(" (capped by ", kCapVariable, "=", cpu_isa_name(*setting.cap),
                           "; the CPU has ", cpu_isa_name(detected_cpu_isa()), ")");
  }
  return text;
}

}  // namespace xtrain
