// An IDX file (MNIST, Fashion-MNIST) as convert_mnist_data and idx_to_images
// read it: the magic number, the counts and sizes in the header against the
// bytes that follow, gzip-compressed or not (zlib's gzopen reads both). Each
// input is read as an images file and as a labels file, and then paired with
// itself as read_idx_dataset pairs the two (which also compares the counts).
#include "fuzz_support.hpp"
#include "xtrain/idx_file.hpp"

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const xtrain_fuzz::ScratchFile file(data, size, "-idx-ubyte");
  xtrain_fuzz::expect_only_xtrain_errors([&] { (void)xtrain::read_idx_images(file.path()); });
  xtrain_fuzz::expect_only_xtrain_errors([&] { (void)xtrain::read_idx_labels(file.path()); });
  xtrain_fuzz::expect_only_xtrain_errors(
      [&] { (void)xtrain::read_idx_dataset(file.path(), file.path()); });
  return 0;
}
