// The CPU kernels of the Pooling layer on channel-blocked activations
// (nChw16c or nChw8c, see core/channel_blocked_layout.hpp): the same Caffe
// semantics and the same bits as the plain kernels of pooling_kernels.hpp.
//
// One block holds B = channel_block() channels of one image, interleaved:
// every spatial position is one B-float vector, one lane per channel. A
// window operation on all B channels is then one vector operation on
// contiguous floats
// (compare and select for MAX, add for AVE), and each lane sees its inputs
// in the reference's order, so every result equals the reference's.
//
// `g` is the plain geometry: g.planes = num * channels, `channels` a
// multiple of B. The input (and input_diff) is always channel-blocked;
// `output_blocked` chooses the layout of output, mask and output_diff:
// channel-blocked, or plain NCHW (for a next layer that wants plain, e.g.
// an InnerProduct after the last pooling). The mask holds one int per
// output, in the output's order: the argmax's index h * width + w within its
// (n, c) plane, -1 for none -- the values the plain kernel stores.
#pragma once

#include "core/cpu_isa.hpp"
#include "layers/pooling_kernels.hpp"

namespace xtrain {

void max_pool_forward_blocked(const PoolingGeometry& g, int channels, const float* input,
                              float* output, int* mask, bool output_blocked);

// input_diff = 0, then each output's gradient added at its argmax. The mask
// must come from max_pool_forward_blocked (or the plain kernel) on the same
// geometry: every argmax lies inside its output's window.
void max_pool_backward_blocked(const PoolingGeometry& g, int channels, const float* output_diff,
                               const int* mask, float* input_diff, bool output_blocked);

void average_pool_forward_blocked(const PoolingGeometry& g, int channels, const float* input,
                                  float* output, bool output_blocked);

void average_pool_backward_blocked(const PoolingGeometry& g, int channels, const float* output_diff,
                                   float* input_diff, bool output_blocked);

// The instruction set the kernels run at now: cpu_isa()'s, or the baseline
// in a build without the AVX copies (not x86-64 GCC).
CpuIsa pooling_blocked_kernels_isa();

}  // namespace xtrain
