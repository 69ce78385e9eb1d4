// The build's paths for tests/test_paths.hpp: the one test file compiled with
// them (tests/CMakeLists.txt).
#include <cstdlib>

namespace xtrain_test_paths {

namespace {

const char* from_environment_or(const char* variable, const char* build_path) {
  const char* dir = std::getenv(variable);
  return dir != nullptr && *dir != '\0' ? dir : build_path;
}

}  // namespace

const char* source_dir() {
  return from_environment_or("XTRAIN_SOURCE_DIR", XTRAIN_BUILD_SOURCE_DIR);
}

const char* tools_dir() {
  return from_environment_or("XTRAIN_TOOLS_DIR", XTRAIN_BUILD_TOOLS_DIR);
}

}  // namespace xtrain_test_paths
