#include <cstdio>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/device.hpp"
#include "xtrain/error.hpp"

namespace xtrain::cli {

int device_query_command() {
  const std::string gpu = FLAGS_gpu.empty() ? "0" : FLAGS_gpu;
  std::string why_none;
  const int available = cuda_device_count(&why_none);
  XTRAIN_CHECK(available > 0, "no GPU to query: ", why_none);
  std::printf("%s\n", cuda_library_versions().c_str());
  for (int id : parse_gpu_ids(gpu, available)) {
    std::printf("%s", cuda_device_description(id).c_str());
  }
  return 0;
}

}  // namespace xtrain::cli
