// Where the tests find the source tree (models/, bench/nets/, tests/fixtures/)
// and the built tools. tests/CMakeLists.txt includes this header in every test
// file (-include) and defines XTRAIN_SOURCE_DIR and XTRAIN_TOOLS_DIR as calls
// of these functions, so that the same names work whether a test reads them
// as a std::string or a std::filesystem::path.
//
// By default they are the paths of the build; XTRAIN_SOURCE_DIR and
// XTRAIN_TOOLS_DIR in the environment move them, for a test binary run away
// from its build tree (the GPU bundle: scripts/gpu_bundle.sh, gpu_check.sh).
//
// A namespace of their own: one named xtrain::testing, declared in every test
// file, would hide ::testing from code inside namespace xtrain.
#pragma once

namespace xtrain_test_paths {

const char* source_dir();
const char* tools_dir();

}  // namespace xtrain_test_paths
