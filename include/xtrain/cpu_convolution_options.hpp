// Process-wide settings of the CPU convolutions (the `xtrain` tool sets them
// from --cpu_algorithm_search). A convolution layer reads them when it
// chooses how to compute: once per input shape, again after a reshape to a
// new shape; a change affects only the choices made after it.
#pragma once

#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

// How each CPU convolution chooses, per pass (forward, backward-data,
// backward-weights), what computes it:
//   kHeuristic: fixed rules measured on a few CPUs (oneDNN's first kernel
//               with measured exceptions; im2col + GEMM for tiny shapes).
//               Costs nothing at set-up; the library's default.
//   kTimed:     every candidate -- each of oneDNN's kernels in each
//               activation layout, and im2col + GEMM -- runs on the layer's
//               shape at set-up and the fastest is taken per pass, as cuDNN's
//               timed search does. The choices are cached per machine (CPU
//               model, ISA, threads, oneDNN version, shape) in
//               cpu_convolution_cache_file(), so later runs start at once.
//               The `xtrain` tool's default.
// Both give results within float rounding of each other (different kernels
// sum in different orders); either is deterministic from run to run once the
// cache holds the shape.
enum class CpuAlgorithmSearch { kHeuristic, kTimed };
XTRAIN_API void set_cpu_algorithm_search(CpuAlgorithmSearch search);
XTRAIN_API CpuAlgorithmSearch cpu_algorithm_search();

// "heuristic" / "timed" (the flag's spelling); parse throws xtrain::Error for
// anything else, naming the choices.
XTRAIN_API std::string to_string(CpuAlgorithmSearch search);
XTRAIN_API CpuAlgorithmSearch parse_cpu_algorithm_search(const std::string& text);

// Where timed choices are kept: $XTRAIN_CACHE_DIR, else $XDG_CACHE_HOME/xtrain,
// else $HOME/.cache/xtrain, with the file cpu_convolutions.tsv inside. Empty
// when none of these is set (the choices then last for the process only).
XTRAIN_API std::string cpu_convolution_cache_file();

}  // namespace xtrain
