#include <sstream>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/cpu_threads.hpp"
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

Device choose_device(const std::string& gpu_flag, bool solver_wants_gpu, int solver_device_id) {
  if (gpu_flag.empty() && !solver_wants_gpu) return Device::cpu();
  std::string why_none;
  const int available = cuda_device_count(&why_none);
  const std::string asked = gpu_flag.empty() ? "solver_mode: GPU" : "--gpu=" + gpu_flag;
  XTRAIN_CHECK(available > 0, asked, " asks for a GPU, but ", why_none,
               "; run on the CPU instead (no --gpu, and solver_mode: CPU in the solver)");
  std::vector<int> ids;
  if (gpu_flag == "all") {
    for (int i = 0; i < available; ++i) ids.push_back(i);
  } else if (gpu_flag.empty()) {
    ids.push_back(solver_device_id);
  } else {
    for (const std::string& part : split_commas(gpu_flag)) {
      try {
        ids.push_back(std::stoi(part));
      } catch (const std::exception&) {
        throw Error("--gpu=" + gpu_flag + ": '" + part +
                    "' is not a GPU id (use e.g. 0 or 0,1 or all)");
      }
    }
  }
  for (int id : ids) {
    XTRAIN_CHECK(id >= 0 && id < available, "GPU ", id, " does not exist (", available,
                 " visible; CUDA_VISIBLE_DEVICES renumbers them from 0)");
  }
  XTRAIN_CHECK(ids.size() == 1, asked,
               ": training on several GPUs is not available yet; give one id");
  return Device::gpu(ids.front());
}

void start_cpu_threads() {
  set_cpu_threads(FLAGS_threads);
  XLOG(INFO) << "CPU: " << cpu_thread_summary();
}

Phase parse_phase(const std::string& text, Phase fallback) {
  if (text.empty()) return fallback;
  if (text == "TRAIN") return TRAIN;
  if (text == "TEST") return TEST;
  throw Error("--phase=" + text + ": use TRAIN or TEST");
}

}  // namespace xtrain::cli
