// xtrain time: forward and backward time of every layer, averaged over
// --iterations, with Caffe's summary lines and a per-layer table.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/data_wait.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain::cli {
namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// "bf16", or "bf16/fp32" when the forward and backward types differ: the
// storage types; the full four are in the log (Layer ... computes in ...).
std::string precision_column(const Layer& layer) {
  const LayerPrecision& precision = layer.precision();
  if (precision.forward_type == precision.backward_type) {
    return number_type_name(precision.forward_type);
  }
  return std::string(number_type_name(precision.forward_type)) + "/" +
         number_type_name(precision.backward_type);
}

long peak_resident_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}
}  // namespace

int time_command() {
  XTRAIN_CHECK(!FLAGS_model.empty(), "xtrain time needs --model=NET.prototxt");
  XTRAIN_CHECK(FLAGS_iterations > 0, "--iterations must be positive, got ", FLAGS_iterations);
  configure_compute();
  if (FLAGS_training_step) {
    XTRAIN_CHECK(parse_phase(FLAGS_phase, TRAIN) == TRAIN,
                 "--training_step times training: leave --phase unset or TRAIN");
    return time_training_steps();
  }
  NetOptions options;
  options.device = choose_device(FLAGS_gpu, false, 0);
  options.share_activation_memory = FLAGS_share_activation_memory;
  options.channel_blocked_activations = FLAGS_channel_blocked_activations;
  options.share_kept_copies = FLAGS_share_kept_copies;
  options.fuse_layers = FLAGS_fuse_layers;
  options.precision = precision_flag();
  const Phase phase = parse_phase(FLAGS_phase, TRAIN);
  Net net(FLAGS_model, phase, FLAGS_level, split_commas(FLAGS_stage), options);
  const bool with_backward = phase == TRAIN;

  XLOG(INFO) << "Performing Forward";
  const float initial_loss = net.forward();
  XLOG(INFO) << "Initial loss: " << initial_loss;
  if (with_backward) {
    XLOG(INFO) << "Performing Backward";
    net.backward();
  }
  log_memory_breakdown(net, 0);

  const auto& layers = net.layers();
  std::vector<double> forward_ms(layers.size(), 0.0);
  std::vector<double> backward_ms(layers.size(), 0.0);
  double total_forward = 0;
  double total_backward = 0;
  // Data layers' wait for input, counted from the benchmark's start.
  std::vector<DataWaitReporter*> waiting(layers.size(), nullptr);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    waiting[i] = data_wait_reporter(*layers[i]);
    if (waiting[i] != nullptr) waiting[i]->take_data_wait_seconds();
  }
  XLOG(INFO) << "*** Benchmark begins ***";
  XLOG(INFO) << "Testing for " << FLAGS_iterations << " iterations.";
  const std::size_t conversions_before = SyncedMemory::layout_conversion_count();
  const auto total_start = Clock::now();
  for (int iteration = 0; iteration < FLAGS_iterations; ++iteration) {
    const auto iteration_start = Clock::now();
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto start = Clock::now();
      layers[i]->forward(net.bottom_vecs()[i], net.top_vecs()[i]);
      synchronize(options.device);  // GPU kernels run asynchronously
      forward_ms[i] += ms_since(start);
    }
    total_forward += ms_since(iteration_start);
    if (with_backward) {
      const auto backward_start = Clock::now();
      // Through the Net, which also writes again the values its memory plan
      // lent out (the layer that wrote them recomputes them): each layer's
      // time runs from the previous layer's end to its own, so it includes
      // that work.
      auto start = Clock::now();
      net.backward([&](int layer) {
        synchronize(options.device);  // GPU kernels run asynchronously
        backward_ms[layer] += ms_since(start);
        start = Clock::now();
      });
      total_backward += ms_since(backward_start);
    }
    XLOG(INFO) << "Iteration: " << iteration + 1
               << " forward-backward time: " << ms_since(iteration_start) << " ms.";
  }
  const double total_ms = ms_since(total_start);
  const int n = FLAGS_iterations;
  // Blocked activations meant to pass between layers untouched; a count here
  // names a layout boundary that costs a conversion (see Net's plan).
  const std::size_t conversions = SyncedMemory::layout_conversion_count() - conversions_before;
  if (conversions > 0) {
    XLOG(WARNING) << "Layout conversions (channel-blocked <-> plain): "
                  << static_cast<double>(conversions) / n << " per iteration";
  }

  XLOG(INFO) << "Average time per layer: ";
  for (std::size_t i = 0; i < layers.size(); ++i) {
    XLOG(INFO) << std::string(
                      10 > net.layer_names()[i].size() ? 10 - net.layer_names()[i].size() : 0, ' ')
               << net.layer_names()[i] << "\tforward: " << forward_ms[i] / n << " ms.";
    if (with_backward) {
      XLOG(INFO) << std::string(
                        10 > net.layer_names()[i].size() ? 10 - net.layer_names()[i].size() : 0,
                        ' ')
                 << net.layer_names()[i] << "\tbackward: " << backward_ms[i] / n << " ms.";
    }
  }
  XLOG(INFO) << "Average Forward pass: " << total_forward / n << " ms.";
  if (with_backward) XLOG(INFO) << "Average Backward pass: " << total_backward / n << " ms.";
  XLOG(INFO) << "Average Forward-Backward: " << total_ms / n << " ms.";
  XLOG(INFO) << "Total Time: " << total_ms << " ms.";
  XLOG(INFO) << "*** Benchmark ends ***";
  std::vector<double> wait_ms(layers.size(), 0.0);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (waiting[i] == nullptr) continue;
    wait_ms[i] = waiting[i]->take_data_wait_seconds() * 1000.0;
    XLOG(INFO) << "Data wait of " << net.layer_names()[i] << ": " << wait_ms[i] / n
               << " ms per iteration (" << 100.0 * wait_ms[i] / total_ms << "% of the time).";
  }

  // The table on stdout: one row per layer, then the totals.
  std::printf("%-24s %-18s %-9s %12s %12s %7s\n", "layer", "type", "precision", "forward ms",
              "backward ms", "share");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const double layer_ms = (forward_ms[i] + backward_ms[i]) / n;
    std::printf("%-24s %-18s %-9s %12.3f %12.3f %6.1f%%\n", net.layer_names()[i].c_str(),
                layers[i]->type(), precision_column(*layers[i]).c_str(), forward_ms[i] / n,
                backward_ms[i] / n, 100.0 * layer_ms / (total_ms / n));
  }
  int batch = 0;
  if (!net.blobs().empty() && net.blobs().front()->num_axes() > 0) {
    batch = net.blobs().front()->shape(0);
  }
  std::printf("forward %.3f ms, backward %.3f ms, forward-backward %.3f ms per iteration",
              total_forward / n, total_backward / n, total_ms / n);
  if (batch > 0) std::printf(" (batch %d: %.0f images/s)", batch, batch * 1000.0 / (total_ms / n));
  std::printf("\n");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (waiting[i] == nullptr) continue;
    std::printf("data wait of %s: %.3f ms per iteration (%.1f%% of the time)\n",
                net.layer_names()[i].c_str(), wait_ms[i] / n, 100.0 * wait_ms[i] / total_ms);
  }
  std::printf("peak resident memory %.1f MiB\n", peak_resident_kib() / 1024.0);
  if (options.device.is_gpu()) {
    const GpuMemoryStatistics gpu = gpu_memory_statistics(options.device.id);
    std::printf("%s memory: peak %.1f MiB in use, %.1f MiB cached, %zu cudaMalloc calls\n",
                options.device.to_string().c_str(), gpu.peak_in_use_bytes / 1048576.0,
                gpu.cached_bytes / 1048576.0, gpu.device_allocations);
  }
  return 0;
}

}  // namespace xtrain::cli
