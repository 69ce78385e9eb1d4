// An ONNX model as `xtrain import` reads it (import_onnx): the ModelProto
// parse, the graph's inputs, every node's importer and the patterns read
// across nodes (MVN, Greater + Cast, TopK, Pad + AveragePool and its divisor
// factors, Scale/Bias by a reshaped value), the Nets built for a Slice's
// input shape and for the check of the pooling windows, and the weights
// gathered by layer. Seeds: small nets exported by `xtrain export`
// (fuzz/seed_writer).
#include "fuzz_support.hpp"
#include "xtrain/onnx.hpp"

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const xtrain_fuzz::ScratchFile file(data, size, ".onnx");
  xtrain_fuzz::expect_only_xtrain_errors([&] { (void)xtrain::import_onnx(file.path()); });
  return 0;
}
