#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/cpu_convolution_options.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/cudnn_options.hpp"
#include "xtrain/error.hpp"
#include "xtrain/gpu_math.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::cli {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::vector<float> parse_mean_values(const std::string& text) {
  std::vector<float> values;
  for (const std::string& part : split_commas(text)) {
    std::size_t used = 0;
    float value = 0;
    try {
      value = std::stof(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    XTRAIN_CHECK(used == part.size(), "--mean_values=", text, ": '", part,
                 "' is not a number (give e.g. --mean_values=104,117,123)");
    values.push_back(value);
  }
  return values;
}

void configure_compute() {
  set_cpu_threads(FLAGS_threads);
  XLOG(INFO) << "CPU: " << cpu_thread_summary();
  XLOG(INFO) << "OpenMP waiting: " << adapt_openmp_waiting_to_load();
  set_cpu_algorithm_search(parse_cpu_algorithm_search(FLAGS_cpu_algorithm_search));
  if (cuda_compiled_in()) XLOG(INFO) << "GPU libraries: " << cuda_library_versions();
  XTRAIN_CHECK(FLAGS_cudnn_workspace_mb >= 0, "--cudnn_workspace_mb=", FLAGS_cudnn_workspace_mb,
               ": give a size in MiB, 0 or more");
  set_cudnn_workspace_limit_mb(static_cast<std::size_t>(FLAGS_cudnn_workspace_mb));
  set_cudnn_algorithm_search(parse_cudnn_algorithm_search(FLAGS_cudnn_algorithm_search));
  set_gpu_math(parse_gpu_math(FLAGS_gpu_math));
  if (cuda_compiled_in()) {
    XLOG(INFO) << "GPU math: " << to_string(gpu_math())
               << (gpu_math() == GpuMath::kTf32
                       ? " (TF32 tensor cores for GEMMs and convolutions on Ampere and later)"
                       : " (IEEE float32, as Caffe; --gpu_math=tf32 for tensor cores)");
  }
}

Phase parse_phase(const std::string& text, Phase fallback) {
  if (text.empty()) return fallback;
  if (text == "TRAIN") return TRAIN;
  if (text == "TEST") return TEST;
  throw Error("--phase=" + text + ": use TRAIN or TEST");
}

}  // namespace xtrain::cli
