// A per-channel bias over the pixels of one image (C planes of P values),
// done by BLAS against a vector of ones:
//   add:                  image[c, p] += bias[c]
//   accumulate_gradient:  bias_diff[c] += sum over p of image_diff[c, p]
#pragma once

#include <vector>

namespace xtrain {

class ChannelBias {
 public:
  ChannelBias() = default;
  ChannelBias(int channels, int pixels);

  int pixels() const { return pixels_; }

  void add(const float* bias, float* image) const;
  void accumulate_gradient(const float* image_diff, float* bias_diff) const;

 private:
  int channels_ = 0;
  int pixels_ = 0;
  std::vector<float> ones_;  // pixels_ ones
};

}  // namespace xtrain
