#include <sstream>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/cudnn_options.hpp"
#include "xtrain/error.hpp"
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

std::vector<int> parse_gpu_ids(const std::string& gpu_flag, int available) {
  std::vector<int> ids;
  if (gpu_flag == "all") {
    for (int i = 0; i < available; ++i) ids.push_back(i);
    return ids;
  }
  for (const std::string& part : split_commas(gpu_flag)) {
    std::size_t used = 0;
    int id = -1;
    try {
      id = std::stoi(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    XTRAIN_CHECK(used == part.size() && id >= 0, "--gpu=", gpu_flag, ": '", part,
                 "' is not a GPU id (use e.g. 0 or 0,1 or all)");
    XTRAIN_CHECK(id < available, "GPU ", id, " does not exist (", available,
                 " visible; CUDA_VISIBLE_DEVICES renumbers them from 0)");
    ids.push_back(id);
  }
  XTRAIN_CHECK(!ids.empty(), "--gpu=", gpu_flag, " names no GPU (use e.g. 0 or 0,1 or all)");
  return ids;
}

std::vector<Device> choose_devices(const std::string& gpu_flag, bool solver_wants_gpu,
                                   int solver_device_id) {
  if (gpu_flag.empty() && !solver_wants_gpu) return {Device::cpu()};
  std::string why_none;
  const int available = cuda_device_count(&why_none);
  const std::string asked = gpu_flag.empty() ? "solver_mode: GPU" : "--gpu=" + gpu_flag;
  XTRAIN_CHECK(available > 0, asked, " asks for a GPU, but ", why_none,
               "; run on the CPU instead (no --gpu, and solver_mode: CPU in the solver)");
  const std::vector<int> ids = gpu_flag.empty()
                                   ? parse_gpu_ids(std::to_string(solver_device_id), available)
                                   : parse_gpu_ids(gpu_flag, available);
  std::vector<Device> devices;
  for (const int id : ids) {
    for (const Device& chosen : devices) {
      XTRAIN_CHECK(chosen.id != id, asked, " names GPU ", id, " twice; give each GPU once");
    }
    // Selects each now, so that a busy (exclusive-mode) GPU is reported first.
    use_device(Device::gpu(id));
    devices.push_back(Device::gpu(id));
  }
  use_device(devices.front());
  return devices;
}

Device choose_device(const std::string& gpu_flag, bool solver_wants_gpu, int solver_device_id) {
  const std::vector<Device> devices = choose_devices(gpu_flag, solver_wants_gpu, solver_device_id);
  XTRAIN_CHECK(devices.size() == 1, "--gpu=", gpu_flag,
               ": this command runs on one GPU; give one id (only train uses several)");
  return devices.front();
}

void configure_compute() {
  set_cpu_threads(FLAGS_threads);
  XLOG(INFO) << "CPU: " << cpu_thread_summary();
  if (cuda_compiled_in()) XLOG(INFO) << "GPU libraries: " << cuda_library_versions();
  XTRAIN_CHECK(FLAGS_cudnn_workspace_mb >= 0, "--cudnn_workspace_mb=", FLAGS_cudnn_workspace_mb,
               ": give a size in MiB, 0 or more");
  set_cudnn_workspace_limit_mb(static_cast<std::size_t>(FLAGS_cudnn_workspace_mb));
  set_cudnn_algorithm_search(parse_cudnn_algorithm_search(FLAGS_cudnn_algorithm_search));
}

Phase parse_phase(const std::string& text, Phase fallback) {
  if (text.empty()) return fallback;
  if (text == "TRAIN") return TRAIN;
  if (text == "TEST") return TEST;
  throw Error("--phase=" + text + ": use TRAIN or TEST");
}

}  // namespace xtrain::cli
