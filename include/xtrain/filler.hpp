// Weight initialisation by FillerParameter, with Caffe's definitions:
//   constant            value
//   uniform             U(min, max)
//   gaussian            N(mean, std); with sparse = s >= 0 each weight is kept
//                       with probability s / shape(0), else zero
//   xavier              U(-a, a), a = sqrt(3 / n)
//   msra                N(0, sqrt(2 / n))
//                       n = fan_in = count / shape(0), fan_out = count /
//                       shape(1), or their mean, by variance_norm
//   positive_unitball   U(0, 1), then each row (count / shape(0)) sums to 1
//   bilinear            the bilinear upsampling kernel (for Deconvolution)
#pragma once

#include <memory>

#include "xtrain/blob.hpp"
#include "xtrain/export.hpp"
#include "xtrain/random.hpp"

namespace xtrain {

class FillerParameter;

class XTRAIN_API Filler {
 public:
  virtual ~Filler() = default;
  virtual void fill(Blob& blob, RandomStream& random) const = 0;
};

// Throws xtrain::Error for an unknown type or a parameter the type rejects.
XTRAIN_API std::unique_ptr<Filler> make_filler(const FillerParameter& param);

}  // namespace xtrain
