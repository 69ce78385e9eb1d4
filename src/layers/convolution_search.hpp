// The timed search of CpuAlgorithmSearch::kTimed: which engine computes each
// pass of one convolution shape, found by running the candidates.
//
// Candidates, per pass: each implementation oneDNN offers with the
// activations in its own (usually channel-blocked), channels-last and NCHW
// layout, im2col + GEMM, and our direct kernels where they take the shape
// (direct_convolution.hpp, in each vector width the CPU has). The passes of
// one oneDNN layout may take different oneDNN kernels; GEMM and the direct
// kernels join a pass only where the activations are plain at the layer's
// boundary (they compute on NCHW). Each candidate is timed
// on the arrays it would get in the net -- channel-blocked ones where the
// engine computes in that layout, since the Net then keeps its neighbours
// blocked -- and the combination with the smallest forward + backward-data +
// backward-weights time wins.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "layers/convolution_engine.hpp"
#include "layers/onednn_convolution.hpp"

namespace xtrain {

// What computes each pass of one shape.
struct ConvolutionChoice {
  static constexpr const char* kGemm = "im2col_gemm";

  // oneDNN's activation layout inside (kChosenByOnednn, kNhwc or kNchw);
  // irrelevant when every pass is kGemm.
  OnednnConvolutionOptions::Layout layout = OnednnConvolutionOptions::Layout::kChosenByOnednn;
  // Per pass (indexed by ConvolutionPass): kGemm, a direct kernel
  // ("direct8", "direct16": DirectConvolution::name_for), or the name of a
  // oneDNN implementation ("jit:avx512_core", "gemm:jit", ...).
  std::array<std::string, kConvolutionPassCount> engines;
  // Seconds per call as measured (0 when not measured, e.g. read from a cache).
  std::array<double, kConvolutionPassCount> seconds{};
  // The CPUs other processes took from our threads while it was timed
  // (cpus_taken_from_threads, core/cpu_load.hpp), or -1 when not known (a
  // cache line written before xtrain recorded it). A choice timed beside busy
  // neighbours measured them as much as the kernels: it is timed again once
  // the machine is quiet (time_convolution_again).
  double load = -1;

  // "layout=any forward=jit:avx2 backward-data=im2col_gemm backward-weights=gemm:jit
  // load=0.02" (load when known); parse() reads that back, or gives nothing
  // for anything else.
  std::string to_string() const;
  static std::optional<ConvolutionChoice> parse(const std::string& text);
  // "forward jit:avx2 (0.31 ms), backward-data im2col_gemm (0.20 ms),
  // backward-weights gemm:jit (0.52 ms); oneDNN layout any", for the log.
  std::string describe() const;
};

// Above this many CPUs taken from our threads (the spin's limit too,
// core/openmp_spin.hpp), a timing measures the neighbours as well.
constexpr double kBusyCpusTaken = 0.25;

// Whether a cached choice should be timed again, from its load and the CPUs
// the other processes take from our threads now: when it was timed beside
// busy neighbours, or its load is not known, and the machine is quiet now
// (timing again beside busy neighbours would measure them again). Measured on
// a 2-vCPU Xeon: CIFAR10-quick's choices timed during a build made its
// iteration 40 ms where choices timed on the quiet machine gave 26.
bool time_convolution_again(double cached_load, double load_now);

// The engines of our own that the search offers on this machine, after
// XTRAIN_MAX_CPU_ISA, and the xtrain version, e.g. "xtrain 0.1.0: im2col_gemm
// direct8 direct16". Part of the choice cache's machine key: choices timed
// before a kernel existed (an older build, a lower ISA cap) must not keep it
// out of later runs, so those are timed again.
std::string own_convolution_engines();

// The most scratch (ConvolutionEngine::pass_scratch_bytes) a candidate may
// want for one call and still be timed: the larger of 16 MiB and the fp32
// bytes of the shape's input, output and weights. The search leaves out
// kernels over it unless no other computes the pass in any layout.
std::size_t convolution_scratch_limit(const ConvolutionShape& shape);

// Times the candidates for `shape` (see above); takes from a fraction of a
// second to a few seconds for a large layer. With `operands` kBfloat16 (a
// bf16 layer on a CPU with bf16 kernels), oneDNN's bf16 kernels join every
// pass too, named "bf16:" + oneDNN's name in the choice: the fp32 kernels
// then compute on rounded operands, so either gives the layer's numbers.
ConvolutionChoice search_convolution(const ConvolutionShape& shape,
                                     NumberType operands = NumberType::kFloat32);

// The prefix of a pass's engine that multiplies in bf16 ("bf16:brgconv:...").
constexpr const char* kBfloat16KernelPrefix = "bf16:";

// The engine a choice describes, or null when this machine cannot build it
// (a cached choice naming a kernel this oneDNN does not offer for the shape).
std::unique_ptr<ConvolutionEngine> make_chosen_convolution(const ConvolutionShape& shape,
                                                           const ConvolutionChoice& choice);

}  // namespace xtrain
