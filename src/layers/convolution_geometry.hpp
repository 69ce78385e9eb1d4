// Reading the 2-D geometry of convolution_param (kernel, pad, stride,
// dilation), for the layers that use it: Convolution, Deconvolution and
// Im2col. Each setting comes from its repeated field (one value for both
// spatial axes, or one per axis) or from its _h/_w pair, as in Caffe.
#pragma once

#include <string>

#include "layers/im2col.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// Fills kernel_*, pad_*, stride_* and dilation_* of the result (channels,
// height and width stay 0). Throws xtrain::Error prefixed with `where` for
// a missing kernel size, both forms of a setting given, a kernel or stride
// of 0, and so on.
Im2colGeometry read_convolution_geometry(const ConvolutionParameter& conv,
                                         const std::string& where);

}  // namespace xtrain
