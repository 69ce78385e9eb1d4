#include "layers/convolution_engine.hpp"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "core/cpu_load.hpp"
#include "layers/convolution_choice_cache.hpp"
#include "layers/convolution_search.hpp"
#include "layers/gemm_convolution.hpp"
#include "layers/onednn_convolution.hpp"
#include "xtrain/cpu_convolution_options.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

auto as_tuple(const ConvolutionShape& s) {
  const Im2colGeometry& g = s.geometry;
  return std::make_tuple(s.num, g.channels, g.height, g.width, g.kernel_h, g.kernel_w, g.pad_h,
                         g.pad_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, s.num_output,
                         s.group, s.bias_term);
}

// The CPUs the other processes take from our threads while a LoadWindow
// lives (core/cpu_load.hpp); -1 where /proc cannot tell.
class LoadWindow {
 public:
  LoadWindow() : cpus_(allowed_cpus()) {
    try {
      start_ = read_cpu_ticks(cpus_);
    } catch (const Error&) {
      readable_ = false;
    }
  }
  double taken() const {
    if (!readable_) return -1;
    try {
      const CpuTicks end = read_cpu_ticks(cpus_);
      return cpus_taken_from_threads(neighbour_cpus(start_, end), end.cpus, cpu_threads());
    } catch (const Error&) {
      return -1;
    }
  }

 private:
  std::vector<int> cpus_;
  CpuTicks start_;
  bool readable_ = true;
};

// The CPUs taken from our threads now: over 0.1 s, measured again when the
// last reading is over 2 s old (a net asks once per cached convolution).
double load_now() {
  static std::mutex mutex;
  static std::chrono::steady_clock::time_point measured_at;
  static double load = -1;
  std::lock_guard<std::mutex> lock(mutex);
  const auto now = std::chrono::steady_clock::now();
  if (load < 0 || now - measured_at > std::chrono::seconds(2)) {
    const LoadWindow window;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    load = window.taken();
    measured_at = std::chrono::steady_clock::now();
  }
  return load;
}

// The timed search's engine (see CpuAlgorithmSearch::kTimed): the cached
// choice for the shape, else one found by timing and then cached. A cached
// choice timed beside busy neighbours is timed again once the machine is
// quiet (time_convolution_again). Null when the choice cannot be built (the
// caller falls back to the heuristic).
std::unique_ptr<ConvolutionEngine> make_timed_convolution_engine(const ConvolutionShape& shape,
                                                                 const std::string& where,
                                                                 NumberType operands) {
  std::string timed_again_because;
  if (const std::optional<ConvolutionChoice> cached = cached_convolution_choice(shape, operands)) {
    const double now = cached->load >= 0 && cached->load <= kBusyCpusTaken ? 0 : load_now();
    if (now >= 0 && time_convolution_again(cached->load, now)) {
      timed_again_because =
          "the choice cached in " + cpu_convolution_cache_file() + " was timed " +
          (cached->load < 0 ? std::string("before xtrain recorded the load")
                            : "while other processes took " + format_cpus(cached->load) +
                                  " CPUs from this process's threads") +
          " and the machine is quiet now (" + format_cpus(now) + " CPUs taken), so it is timed again: ";
    } else if (auto engine = make_chosen_convolution(shape, *cached)) {
      XLOG(INFO) << where << " " << shape.to_string() << ": timed earlier (cached in "
                 << cpu_convolution_cache_file() << "): " << cached->describe();
      return engine;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const LoadWindow window;
  ConvolutionChoice choice = search_convolution(shape, operands);
  choice.load = window.taken();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto engine = make_chosen_convolution(shape, choice);
  if (!engine) return nullptr;
  cache_convolution_choice(shape, operands, choice);
  XLOG(INFO) << where << " " << shape.to_string() << ": " << timed_again_because
             << "timed (search took " << seconds << " s): " << choice.describe();
  if (choice.load > kBusyCpusTaken) {
    XLOG(WARNING) << where << ": other processes took " << format_cpus(choice.load)
                  << " CPUs from this process's threads while its convolution kernels were timed, "
                     "so the choice may be slow; it is kept until a run on a quiet machine "
                     "times it again";
  }
  return engine;
}

}  // namespace

std::string ConvolutionShape::to_string() const {
  const Im2colGeometry& g = geometry;
  return detail::concat(num, "x", g.channels, "x", g.height, "x", g.width, " -> ", num_output, "x",
                        out_height(), "x", out_width(), ", kernel ", g.kernel_h, "x", g.kernel_w,
                        ", stride ", g.stride_h, "x", g.stride_w, ", pad ", g.pad_h, "x", g.pad_w,
                        ", dilation ", g.dilation_h, "x", g.dilation_w, ", group ", group,
                        bias_term ? ", bias" : ", no bias");
}

const char* to_string(ConvolutionPass pass) {
  switch (pass) {
    case ConvolutionPass::kForward:
      return "forward";
    case ConvolutionPass::kBackwardData:
      return "backward-data";
    case ConvolutionPass::kBackwardWeights:
      return "backward-weights";
  }
  return "?";
}

void ConvolutionEngine::forward_in(const Layouts& layouts, const float* bottom,
                                   const float* weights, const float* bias, float* top) {
  XTRAIN_ASSERT(layouts.bottom == MemoryLayout::kPlain && layouts.top == MemoryLayout::kPlain,
                name(), " computes on plain arrays only");
  forward(bottom, weights, bias, top);
}

void ConvolutionEngine::backward_in(const Layouts& layouts, const float* bottom,
                                    const float* top_diff, const float* weights, float* weight_diff,
                                    float* bias_diff, float* bottom_diff) {
  XTRAIN_ASSERT(layouts.bottom == MemoryLayout::kPlain && layouts.top == MemoryLayout::kPlain,
                name(), " computes on plain arrays only");
  backward(bottom, top_diff, weights, weight_diff, bias_diff, bottom_diff);
}

bool operator==(const ConvolutionShape& a, const ConvolutionShape& b) {
  return as_tuple(a) == as_tuple(b);
}

bool convolution_kernels_multiply(NumberType operands) {
  return operands == NumberType::kBfloat16 && onednn_available() &&
         cpu_computes_bfloat16_natively();
}

ConvolutionEngineChoice convolution_engine_choice_from_environment() {
  const char* value = std::getenv("XTRAIN_CONV_IMPL");
  if (value == nullptr || *value == '\0') return ConvolutionEngineChoice::kAuto;
  const std::string_view choice(value);
  if (choice == "auto") return ConvolutionEngineChoice::kAuto;
  if (choice == "onednn") return ConvolutionEngineChoice::kOnednn;
  if (choice == "gemm") return ConvolutionEngineChoice::kGemm;
  throw Error(detail::concat(
      "XTRAIN_CONV_IMPL=", choice,
      " is not a convolution engine; use 'auto' (the default: oneDNN where it is faster, else "
      "GEMM), 'onednn' (oneDNN wherever it can) or 'gemm' (im2col + BLAS)"));
}

std::unique_ptr<ConvolutionEngine> make_convolution_engine(const ConvolutionShape& shape,
                                                           const ConvolutionParameter& param,
                                                           const std::string& where,
                                                           NumberType operands) {
  // bf16 kernels where the CPU has them: the timed search weighs them against
  // the fp32 ones on rounded operands, pass by pass; the heuristic takes
  // oneDNN's bf16 kernels.
  const bool bf16_kernels =
      convolution_kernels_multiply(operands) &&
      convolution_engine_choice_from_environment() != ConvolutionEngineChoice::kGemm &&
      !param.force_nd_im2col();
  if (bf16_kernels &&
      convolution_engine_choice_from_environment() == ConvolutionEngineChoice::kAuto &&
      cpu_algorithm_search() == CpuAlgorithmSearch::kTimed) {
    if (auto timed = make_timed_convolution_engine(shape, where, operands)) return timed;
    XLOG(WARNING) << where << " " << shape.to_string()
                  << ": the timed choice could not be built; using the heuristic";
  }
  if (bf16_kernels) {
    OnednnConvolutionOptions bf16;
    bf16.operands = NumberType::kBfloat16;
    std::string why_not_bf16;
    if (auto fast = make_onednn_convolution(shape, bf16, &why_not_bf16)) {
      XLOG(INFO) << where << " " << shape.to_string() << ": " << fast->name();
      return fast;
    }
    XLOG(INFO) << where << " " << shape.to_string()
               << ": no bf16 kernel, so fp32 on rounded operands, because " << why_not_bf16;
  }
  // Below this many FLOPs per forward pass GEMM wins: oneDNN's fixed costs
  // (weight and activation reorders, waking its threads) dominate. Measured
  // per pass on 2 cores: 2x3x6x5 -> 4 (0.01 MFLOP) 1 us GEMM vs 3 us oneDNN;
  // 2x4x8x8 -> 8 (0.07 MFLOP) even; 4x8x12x12 -> 16 (1 MFLOP) 28 vs 7 us.
  constexpr double kSmallestForOnednn = 0.1e6;

  std::string why_not;  // why the oneDNN engine is not used
  const ConvolutionEngineChoice choice = convolution_engine_choice_from_environment();
  if (choice == ConvolutionEngineChoice::kGemm) {
    why_not = "XTRAIN_CONV_IMPL=gemm";
  } else if (param.force_nd_im2col()) {
    why_not = "force_nd_im2col is set";
  } else if (choice == ConvolutionEngineChoice::kAuto &&
             cpu_algorithm_search() == CpuAlgorithmSearch::kTimed) {
    // The search times GEMM too, so it also decides the small shapes.
    if (auto timed = make_timed_convolution_engine(shape, where, NumberType::kFloat32)) {
      return timed;
    }
    XLOG(WARNING) << where << " " << shape.to_string()
                  << ": the timed choice could not be built; using the heuristic";
  }
  if (why_not.empty() && choice == ConvolutionEngineChoice::kAuto &&
      shape.flops() < kSmallestForOnednn) {
    why_not = detail::concat("too small for oneDNN to pay off (", shape.flops(),
                             " FLOPs per forward pass)");
  }
  if (why_not.empty()) {
    if (auto fast = make_onednn_convolution(shape, OnednnConvolutionOptions(), &why_not)) {
      XLOG(INFO) << where << " " << shape.to_string() << ": " << fast->name();
      return fast;
    }
  }
  XLOG(INFO) << where << " " << shape.to_string() << ": gemm (im2col + BLAS), because " << why_not;
  return std::make_unique<GemmConvolution>(shape);
}

}  // namespace xtrain
