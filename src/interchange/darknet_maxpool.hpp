// Darknet's max pooling as Caffe's.
//
// Darknet ([maxpool] size k, stride s, padding P, default k - 1): along an
// axis of n values, out = (n + P - k) / s + 1 (rounded down) windows, window
// i covering [i s - P/2, i s - P/2 + k) clipped to the input.
// Caffe: out = ceil((n + 2 pad - k) / s) + 1 (less one when the layer pads
// and the last window would start in the end padding), window j covering
// [j s - pad, j s - pad + k) clipped to the input.
//
// With pad = P/2 + m s, Caffe's window j + m is Darknet's window j; Caffe
// just rounds the count differently. So: the smallest m (per axis) for which
// Caffe has all of Darknet's windows (and pad < k, as Caffe requires), and a
// Crop (offset m, to Darknet's count) where Caffe has others too. YOLOv3-tiny's
// size 2, stride 1 on 13 x 13 (Darknet keeps 13 x 13, Caffe pad 0 gives 12)
// becomes pad 1 (14 windows) cropped from offset 1.
#pragma once

#include <optional>

namespace xtrain::interchange {

struct DarknetPoolingAxis {
  int input = 0;
  int size = 1;
  int stride = 1;
  int padding = 0;
};

int darknet_pooled_length(const DarknetPoolingAxis& axis);

struct CaffePoolingPlan {
  int pad_h = 0;
  int pad_w = 0;
  int offset_h = 0;  // the Crop's, in windows
  int offset_w = 0;
  int pooled_h = 0;  // Caffe's pooled size, before the crop
  int pooled_w = 0;
  bool needs_crop() const;
  int darknet_h = 0;
  int darknet_w = 0;
};

// The Caffe pooling (and crop) that keeps exactly Darknet's windows, or none
// when no pad below the kernel size does.
std::optional<CaffePoolingPlan> caffe_pooling_for(const DarknetPoolingAxis& height,
                                                  const DarknetPoolingAxis& width);

}  // namespace xtrain::interchange
