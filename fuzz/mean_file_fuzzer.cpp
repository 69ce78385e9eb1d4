// A mean file (.binaryproto, a BlobProto) as a Data layer's mean_file reads
// it: parsed, its shape (legacy num/channels/height/width or `shape`) checked
// against its values, then matched against an image shape as the
// transformer does (3x4x5, and the shape it claims itself).
#include "data/mean_file.hpp"
#include "fuzz_support.hpp"

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const xtrain_fuzz::ScratchFile file(data, size, ".binaryproto");
  xtrain_fuzz::expect_only_xtrain_errors([&] {
    const xtrain::MeanImage mean = xtrain::read_mean_file(file.path());
    xtrain_fuzz::expect_only_xtrain_errors([&] { mean.check_matches({3, 4, 5}); });
    if (mean.shape.size() == 4) {
      mean.check_matches({mean.shape[1], mean.shape[2], mean.shape[3]});
    }
  });
  return 0;
}
