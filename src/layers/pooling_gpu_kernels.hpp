// The Pooling layer's own CUDA kernels, for what cuDNN cannot compute as
// Caffe does (see pooling_layer.cpp): MAX always (its argmax decides the
// gradient), AVE for the ceil-mode geometries. Same semantics and the same
// order of operations as the CPU reference kernels (layers/pooling_kernels.hpp),
// whose window arithmetic they share (layers/pooling_window.hpp): each
// output reads its window row-major, keeping the first maximum; each input
// gradient sums its windows' contributions in output order, starting from 0.
// All on cuda::stream().
#pragma once

#include "layers/pooling_kernels.hpp"

namespace xtrain::cuda {

// output, and the argmax y * width + x within the plane (-1 for none) into
// exactly one of mask_top (float, the layer's second top) and mask (int).
void max_pool_forward_gpu(const PoolingGeometry& g, const float* input, float* output,
                          float* mask_top, int* mask);
// input_diff = sum of the output gradients whose argmax it is (overwrites).
void max_pool_backward_gpu(const PoolingGeometry& g, const float* output_diff,
                           const float* mask_top, const int* mask, float* input_diff);
void average_pool_forward_gpu(const PoolingGeometry& g, const float* input, float* output);
// input_diff = sum over the windows holding it of output_diff / pool_size.
void average_pool_backward_gpu(const PoolingGeometry& g, const float* output_diff,
                               float* input_diff);

}  // namespace xtrain::cuda
