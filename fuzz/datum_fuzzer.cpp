// One LMDB record as the Data layer reads it (src/data/data_layer.cpp): the
// value parsed and checked as a Datum (parse_datum: raw uint8 or float
// pixels, or an encoded JPEG/PNG/...), its shape found (decoding an encoded
// one), checked against the transformation, then its pixels transformed into
// a batch slot. Four transformations, so the input meets each path: none;
// a TRAIN crop with mirroring and one mean value per channel; force_color
// with a scale; force_gray with a TEST crop.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_transformer.hpp"
#include "fuzz_support.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/random.hpp"

namespace {

struct Case {
  std::unique_ptr<xtrain::DataTransformer> transformer;
  xtrain::DataTransformer::Scratch scratch;
};

std::vector<Case> make_cases() {
  std::vector<Case> cases;
  auto add = [&](const xtrain::TransformationParameter& param, xtrain::Phase phase) {
    cases.push_back({std::make_unique<xtrain::DataTransformer>(param, phase, "fuzz"), {}});
  };
  xtrain::TransformationParameter plain;
  add(plain, xtrain::TEST);
  xtrain::TransformationParameter cropped;
  cropped.set_crop_size(3);
  cropped.set_mirror(true);
  for (float mean : {104.f, 117.f, 123.f}) cropped.add_mean_value(mean);
  add(cropped, xtrain::TRAIN);
  xtrain::TransformationParameter colour;
  colour.set_force_color(true);
  colour.set_scale(1.f / 256);
  add(colour, xtrain::TEST);
  xtrain::TransformationParameter grey;
  grey.set_force_gray(true);
  grey.set_crop_size(2);
  add(grey, xtrain::TEST);
  return cases;
}

// DataLayer::LayerSetUp on the first record, then decode_record on it.
void read_as_a_data_layer(std::string_view bytes, Case& one) {
  const std::string source = "fuzz_lmdb";
  xtrain::Datum datum;
  xtrain::parse_datum(bytes, "00000000", source, &datum);
  const xtrain::DatumShape shape = one.transformer->decoded_shape(datum);
  one.transformer->check_input_shape(shape);
  // A record may rightly hold a large image (an encoded one up to the 2^30
  // pixels image_header allows): the Data layer would allocate its batch for
  // it. Past this harness's allocation limit that is not a finding.
  constexpr std::size_t kMaxSlotFloats = std::size_t{32} << 20;
  const std::size_t count = one.transformer->output_shape(shape).count();
  if (count > kMaxSlotFloats) return;
  std::vector<float> slot(count);
  const xtrain::PixelSource pixels = one.transformer->pixels_of(datum, one.scratch);
  if (!one.transformer->batchable_with(shape, pixels.shape)) return;
  xtrain::RandomStream random(7);
  one.transformer->transform(pixels, random, slot.data());
}

}  // namespace

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::vector<Case> cases = make_cases();
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (Case& one : cases) {
    xtrain_fuzz::expect_only_xtrain_errors([&] { read_as_a_data_layer(bytes, one); });
  }
  return 0;
}
