// Process-wide settings of the cuDNN convolutions (the `xtrain` tool sets
// them from --cudnn_workspace_mb and --cudnn_algorithm_search). They are
// compiled into every build, so the flags parse the same way in a CPU-only
// build, where nothing reads them.
//
// A convolution layer reads both when it chooses its algorithms: once per
// input shape, again after a reshape to a new shape. Changing them later
// affects only the choices made after the change.
#pragma once

#include <cstddef>
#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

// The most device memory one convolution pass may use as cuDNN workspace, in
// MiB (1 << 20 bytes). The default, 8, is Caffe 1.0's limit for its cuDNN
// convolutions (workspace_limit_bytes = 8 MB): nets that fit a GPU under Caffe
// fit it here too. A larger cap lets cuDNN pick faster algorithms (FFT,
// Winograd) that need more scratch memory; 0 allows only algorithms without
// workspace.
constexpr std::size_t kDefaultCudnnWorkspaceLimitMb = 8;
XTRAIN_API void set_cudnn_workspace_limit_mb(std::size_t megabytes);
XTRAIN_API std::size_t cudnn_workspace_limit_mb();
XTRAIN_API std::size_t cudnn_workspace_limit_bytes();

// How each convolution pass's algorithm is chosen:
//   kHeuristic: cuDNN's heuristics (cudnnGet*Algorithm_v7) rank the
//               algorithms without running anything; the first that works and
//               fits the cap is taken. Cheap, the default.
//   kTimed:     cuDNN runs every algorithm that fits the cap once
//               (cudnnFind*AlgorithmEx) and the fastest is taken. Costs a few
//               passes per shape at the start, may pick faster ones.
enum class CudnnAlgorithmSearch { kHeuristic, kTimed };
XTRAIN_API void set_cudnn_algorithm_search(CudnnAlgorithmSearch search);
XTRAIN_API CudnnAlgorithmSearch cudnn_algorithm_search();

// "heuristic" / "timed" (the flag's spelling); parse throws xtrain::Error for
// anything else, naming the choices.
XTRAIN_API std::string to_string(CudnnAlgorithmSearch search);
XTRAIN_API CudnnAlgorithmSearch parse_cudnn_algorithm_search(const std::string& text);

}  // namespace xtrain
