#include <cstdio>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/device.hpp"
#include "xtrain/error.hpp"

namespace xtrain::cli {

int device_query_command() {
  const std::string gpu = FLAGS_gpu.empty() ? "0" : FLAGS_gpu;
  std::string why_none;
  XTRAIN_CHECK(cuda_device_count(&why_none) > 0, "no GPU to query: ", why_none);
  std::vector<std::string> ids = gpu == "all" ? std::vector<std::string>{} : split_commas(gpu);
  if (gpu == "all") {
    for (int i = 0; i < cuda_device_count(); ++i) ids.push_back(std::to_string(i));
  }
  for (const std::string& id : ids) {
    std::printf("%s", cuda_device_description(std::stoi(id)).c_str());
  }
  return 0;
}

}  // namespace xtrain::cli
