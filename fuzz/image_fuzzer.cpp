// An image file as convert_imageset stores it (image_bytes_to_datum): the
// header's claimed size checked (image_header), the bytes decoded by OpenCV
// (JPEG, PNG, BMP, TIFF, ...), resized, and, for --encoded, re-encoded or
// kept as they are. The options are those of four convert_imageset runs:
// plain colour; --gray with a resize; --encoded keeping the file's bytes;
// --encoded --encode_type=png with a resize.
//
// OpenCV's codecs are not instrumented; what is looked for is whether every
// failure of theirs comes back as xtrain::Error naming the image, and what
// our code does with the sizes and channels a damaged image decodes to.
#include <string>
#include <vector>

#include "data/image_header.hpp"
#include "fuzz_support.hpp"
#include "xtrain/image_datum.hpp"

namespace {
struct Run {
  const char* path;  // the file's name, for its extension
  xtrain::ImageDatumOptions options;
};

std::vector<Run> convert_imageset_runs() {
  std::vector<Run> runs(4);
  runs[0].path = "a.jpg";
  runs[1].path = "b.png";
  runs[1].options.color = xtrain::ColorMode::kGray;
  runs[1].options.resize_height = 7;
  runs[1].options.resize_width = 5;
  runs[2].path = "c.jpg";
  runs[2].options.encoded = true;
  runs[3].path = "d.bmp";
  runs[3].options.encoded = true;
  runs[3].options.encode_type = "png";
  runs[3].options.resize_height = 4;
  runs[3].options.resize_width = 6;
  return runs;
}
}  // namespace

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<Run> runs = convert_imageset_runs();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)xtrain::encoded_image_size(bytes);  // never throws
  for (const Run& run : runs) {
    xtrain_fuzz::expect_only_xtrain_errors(
        [&] { (void)xtrain::image_bytes_to_datum(bytes, run.path, 3, run.options, run.path); });
  }
  return 0;
}
