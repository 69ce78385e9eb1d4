// Single-thread speed of our own convolution kernels: the direct kernels
// (src/layers/direct_convolution_kernels.*), correlation (forward and
// backward-data) and weight gradient of one image, on the shapes of LeNet's
// and CIFAR10-quick's first convolutions; and Winograd F(2x2, 5x5)
// (src/layers/winograd_kernels.*), one group of 8 images, on CIFAR10-quick's
// conv2 and conv3. In GFLOP/s (Winograd's: the direct sum's FLOPs over its
// time, so above the peak where it wins). The kernels
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
#include "layers/winograd_kernels.hpp"

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
  struct WinogradShape {
    const char* name;
    int channels, size, outputs;
  };
  const WinogradShape winograd_shapes[] = {{"CIFAR10-quick conv2 (32x16x16, pad 2, 32)", 32, 16, 32},
                                           {"CIFAR10-quick conv3 (32x8x8, pad 2, 64)", 32, 8, 64}};
  for (const WinogradShape& s : winograd_shapes) {
    const WinogradPlan plan = make_winograd_plan(s.channels, s.size, s.size, 2, 2, s.outputs);
    std::vector<float> weights(plan.transformed_weight_count(), 0.01f);
    std::vector<std::vector<float>> images(kWinogradLanes), results(kWinogradLanes);
    const float* sources[kWinogradLanes];
    float* outputs[kWinogradLanes];
    for (int l = 0; l < kWinogradLanes; ++l) {
      images[l].assign(static_cast<std::size_t>(s.channels) * s.size * s.size, 0.5f);
      results[l].resize(static_cast<std::size_t>(s.outputs) * s.size * s.size);
      sources[l] = images[l].data();
      outputs[l] = results[l].data();
    }
    WinogradScratch scratch;
    const double flops =
        2.0 * kWinogradLanes * s.outputs * s.size * s.size * s.channels * 25;
    const double seconds = seconds_per_call(reps, [&] {
      winograd_kernels().convolve_group(plan, sources, weights.data(), nullptr, outputs, 0,
                                        plan.tiles_y(), scratch);
    });
    std::printf("  winograd %-48s 8 images    %6.1f us   %6.1f GFLOP/s (direct-equivalent)\n",
                s.name, seconds * 1e6, flops / seconds / 1e9);
  }
  return 0;
}
