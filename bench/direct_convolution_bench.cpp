// Single-thread speed of our direct convolution kernels
// (src/layers/direct_convolution_kernels.*): the correlation (forward and
// backward-data) and the weight gradient of one image, on the shapes of
// LeNet's and CIFAR10-quick's first convolutions, in GFLOP/s. The kernels
// are those cpu_isa() picks, so XTRAIN_MAX_CPU_ISA=avx2 measures the AVX2
// copy on an AVX-512 machine; bench/direct_convolution_bench.sh runs every
// level the CPU has.
//
//   bench/direct_convolution_bench.sh [repetitions, default 20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/cpu_isa.hpp"
#include "layers/direct_convolution_kernels.hpp"

namespace {

struct Shape {
  const char* name;
  int channels, padded_size, kernel, outputs;
};

// The fastest of `reps` timings of 50 calls, in seconds per call.
template <typename Call>
double seconds_per_call(int reps, Call call) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int n = 0; n < 50; ++n) call();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 50;
    best = std::min(best, seconds);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xtrain;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const Shape shapes[] = {{"LeNet conv1 (1x28x28, 5x5, 20)", 1, 28, 5, 20},
                          {"CIFAR10-quick conv1 (3x36x36 padded, 5x5, 32)", 3, 36, 5, 32}};
  std::printf("ISA %s\n", cpu_isa_name(cpu_isa()));
  for (int lanes : correlation_lane_widths()) {
    const CorrelationKernels* kernels = correlation_kernels(lanes);
    for (const Shape& s : shapes) {
      const CorrelationPlan plan = make_correlation_plan(s.channels, s.padded_size, s.padded_size,
                                                         s.kernel, s.kernel, s.outputs, lanes);
      std::vector<float> source(static_cast<std::size_t>(s.channels) * s.padded_size * s.padded_size,
                                0.5f);
      std::vector<float> packed(plan.packed_weight_count(), 0.1f), bias(s.outputs, 0.0f);
      std::vector<float> output(static_cast<std::size_t>(s.outputs) * plan.output_height() *
                                plan.output_width());
      std::vector<float> partial(plan.packed_weight_count() * lanes, 0.0f), bias_partial(s.outputs);
      const double flops = 2.0 * output.size() * s.channels * s.kernel * s.kernel;
      const double correlate = seconds_per_call(reps, [&] {
        kernels->correlate(plan, source.data(), packed.data(), bias.data(), output.data());
      });
      const double gradient = seconds_per_call(reps, [&] {
        kernels->weight_gradient(plan, source.data(), output.data(), partial.data(),
                                 bias_partial.data());
      });
      std::printf("  direct%-2d %-48s correlate %6.1f GFLOP/s   weight gradient %6.1f GFLOP/s\n",
                  lanes, s.name, flops / correlate / 1e9, flops / gradient / 1e9);
    }
  }
  return 0;
}
