#include "xtrain/filler.hpp"

#include <cmath>
#include <vector>

#include "core/random_fill.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

void reject_sparse(const FillerParameter& param) {
  XTRAIN_CHECK(param.sparse() == -1, "filler '", param.type(),
               "' does not support 'sparse'; only the gaussian filler does");
}

// Caffe's fan-in/fan-out: a weight blob is (outputs, inputs, spatial...).
float variance_norm_count(const Blob& blob, const FillerParameter& param) {
  XTRAIN_CHECK(blob.num_axes() >= 1 && blob.count() > 0,
               "filler '", param.type(), "' needs a non-empty blob, got ", blob.shape_string());
  const float fan_in = static_cast<float>(blob.count()) / blob.shape(0);
  const float fan_out =
      blob.num_axes() > 1 ? static_cast<float>(blob.count()) / blob.shape(1) : fan_in;
  switch (param.variance_norm()) {
    case FillerParameter::FAN_OUT: return fan_out;
    case FillerParameter::AVERAGE: return (fan_in + fan_out) / 2.0f;
    default: return fan_in;
  }
}

// A filler that draws on its FillerParameter. Only the gaussian filler
// takes `sparse`; the others refuse it.
class ParameterFiller : public Filler {
 public:
  explicit ParameterFiller(const FillerParameter& param, bool takes_sparse = false)
      : param_(param) {
    if (!takes_sparse) reject_sparse(param);
  }

 protected:
  FillerParameter param_;
};

class ConstantFiller : public ParameterFiller {
 public:
  using ParameterFiller::ParameterFiller;
  void fill(Blob& blob, RandomStream&) const override {
    float* data = blob.mutable_cpu_data();
    for (std::size_t i = 0; i < blob.count(); ++i) data[i] = param_.value();
  }
};

class UniformFiller : public ParameterFiller {
 public:
  using ParameterFiller::ParameterFiller;
  void fill(Blob& blob, RandomStream& random) const override {
    random.uniform(blob.count(), param_.min(), param_.max(), blob.mutable_cpu_data());
  }
};

class GaussianFiller : public ParameterFiller {
 public:
  explicit GaussianFiller(const FillerParameter& param)
      : ParameterFiller(param, /*takes_sparse=*/true) {}
  void fill(Blob& blob, RandomStream& random) const override {
    float* data = blob.mutable_cpu_data();
    random.gaussian(blob.count(), param_.mean(), param_.std(), data);
    if (param_.sparse() < 0) return;
    // Keep each weight with probability sparse / num_outputs, so that each
    // output sees `sparse` non-zero inputs on average.
    XTRAIN_CHECK(blob.num_axes() >= 1, "sparse gaussian filler needs a blob with axes");
    const float keep = static_cast<float>(param_.sparse()) / blob.shape(0);
    std::vector<unsigned> mask(blob.count());
    random.bernoulli(blob.count(), std::min(keep, 1.0f), mask.data());
    for (std::size_t i = 0; i < blob.count(); ++i) data[i] *= static_cast<float>(mask[i]);
  }
};

class XavierFiller : public ParameterFiller {
 public:
  using ParameterFiller::ParameterFiller;
  void fill(Blob& blob, RandomStream& random) const override {
    const float scale = std::sqrt(3.0f / variance_norm_count(blob, param_));
    random.uniform(blob.count(), -scale, scale, blob.mutable_cpu_data());
  }
};

class MsraFiller : public ParameterFiller {
 public:
  using ParameterFiller::ParameterFiller;
  void fill(Blob& blob, RandomStream& random) const override {
    const float stddev = std::sqrt(2.0f / variance_norm_count(blob, param_));
    random.gaussian(blob.count(), 0.0f, stddev, blob.mutable_cpu_data());
  }
};

class PositiveUnitballFiller : public Filler {
 public:
  explicit PositiveUnitballFiller(const FillerParameter& param) { reject_sparse(param); }
  void fill(Blob& blob, RandomStream& random) const override {
    float* data = blob.mutable_cpu_data();
    random.uniform(blob.count(), 0.0f, 1.0f, data);
    const int rows = blob.shape(0);
    const std::size_t row_size = blob.count() / rows;
    for (int row = 0; row < rows; ++row) {
      double sum = 0;
      for (std::size_t j = 0; j < row_size; ++j) sum += data[row * row_size + j];
      for (std::size_t j = 0; j < row_size; ++j) data[row * row_size + j] /= static_cast<float>(sum);
    }
  }
};

// The kernel of bilinear upsampling by a factor f = ceil(kernel / 2): each
// tap weighs (1 - |x / f - c|)(1 - |y / f - c|) with c the kernel centre.
class BilinearFiller : public Filler {
 public:
  explicit BilinearFiller(const FillerParameter& param) { reject_sparse(param); }
  void fill(Blob& blob, RandomStream&) const override {
    XTRAIN_CHECK(blob.num_axes() == 4 && blob.shape(2) == blob.shape(3),
                 "bilinear filler needs a 4-d blob with a square kernel, got ",
                 blob.shape_string());
    const int width = blob.shape(3);
    const int height = blob.shape(2);
    const float factor = std::ceil(width / 2.0f);
    const float centre = (2 * factor - 1 - static_cast<int>(factor) % 2) / (2.0f * factor);
    float* data = blob.mutable_cpu_data();
    for (std::size_t i = 0; i < blob.count(); ++i) {
      const float x = static_cast<float>(i % width);
      const float y = static_cast<float>((i / width) % height);
      data[i] = (1 - std::fabs(x / factor - centre)) * (1 - std::fabs(y / factor - centre));
    }
  }
};

}  // namespace

std::optional<RandomDistribution> per_element_distribution(const FillerParameter& param,
                                                           const Blob& blob) {
  const std::string& type = param.type();
  const auto uniform = [](float low, float high) {
    XTRAIN_CHECK(low <= high, "uniform distribution needs min <= max, got min = ", low,
                 ", max = ", high);
    return RandomDistribution{RandomDrawKind::kUniform, high - low, low};
  };
  const auto normal = [](float mean, float stddev) {
    XTRAIN_CHECK(stddev > 0, "gaussian distribution needs std > 0, got ", stddev);
    return RandomDistribution{RandomDrawKind::kNormal, stddev, mean};
  };
  if (type == "uniform") return uniform(param.min(), param.max());
  if (type == "gaussian" && param.sparse() < 0) return normal(param.mean(), param.std());
  if (type == "xavier") {
    const float scale = std::sqrt(3.0f / variance_norm_count(blob, param));
    return uniform(-scale, scale);
  }
  if (type == "msra") return normal(0.0f, std::sqrt(2.0f / variance_norm_count(blob, param)));
  return std::nullopt;
}

std::unique_ptr<Filler> make_filler(const FillerParameter& param) {
  const std::string& type = param.type();
  if (type == "constant") return std::make_unique<ConstantFiller>(param);
  if (type == "uniform") return std::make_unique<UniformFiller>(param);
  if (type == "gaussian") return std::make_unique<GaussianFiller>(param);
  if (type == "xavier") return std::make_unique<XavierFiller>(param);
  if (type == "msra") return std::make_unique<MsraFiller>(param);
  if (type == "positive_unitball") return std::make_unique<PositiveUnitballFiller>(param);
  if (type == "bilinear") return std::make_unique<BilinearFiller>(param);
  throw Error("unknown filler type '" + type +
              "'; known: constant, uniform, gaussian, xavier, msra, positive_unitball, bilinear");
}

}  // namespace xtrain
