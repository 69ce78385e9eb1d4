// The timed convolution choices of this machine, kept in
// cpu_convolution_cache_file() so that later runs need not time again.
//
// The file is text, one choice per line: the machine, the shape and the
// choice, tab-separated, e.g.
//   AMD EPYC 9R14 (family 25 model 17); 2 threads; oneDNN 2.6.3 (...);
//   xtrain 0.1.0: im2col_gemm direct8 direct16<TAB>
//   64x1x28x28 -> 20x24x24, kernel 5x5, ...<TAB>layout=any forward=... ...
// A choice applies only to the machine it was measured on: another CPU
// model, ISA cap, thread count, oneDNN version or xtrain build with other
// kernels is another machine. Lines
// that do not parse are skipped; the file is rewritten whole (atomically)
// when a choice is added, so several processes may share it.
#pragma once

#include <optional>
#include <string>

#include "layers/convolution_search.hpp"

namespace xtrain {

// This process's machine key: CPU model, threads, oneDNN and its ISA, and
// our own engines (own_convolution_engines).
std::string convolution_machine_key();

// The cached choice for `shape` (with `operands`, see search_convolution) on
// this machine, if any.
std::optional<ConvolutionChoice> cached_convolution_choice(
    const ConvolutionShape& shape, NumberType operands = NumberType::kFloat32);

// Keeps `choice` for `shape`, in memory and in the file. A file that cannot be
// written is reported once (a warning) and the choice lasts for the process.
void cache_convolution_choice(const ConvolutionShape& shape, NumberType operands,
                              const ConvolutionChoice& choice);

}  // namespace xtrain
