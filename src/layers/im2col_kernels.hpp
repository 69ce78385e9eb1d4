// CUDA im2col / col2im for the Im2col layer: the rearrangement of
// layers/im2col.hpp over a batch of `images` images laid out one after the
// other (each geometry.channels x height x width, its columns
// (channels*kh*kw) x (out_h*out_w)). Device pointers; the calling thread's
// stream. Compiled only in CUDA builds.
#pragma once

#include <cstddef>

#include "layers/im2col.hpp"

namespace xtrain::cuda {

void im2col(const float* images, std::size_t images_count, const Im2colGeometry& geometry,
            float* columns);
// Overwrites the images with the sums of the columns' entries over each pixel,
// in the order the CPU col2im adds them (kernel row, then kernel column).
void col2im(const float* columns, std::size_t images_count, const Im2colGeometry& geometry,
            float* images);

}  // namespace xtrain::cuda
