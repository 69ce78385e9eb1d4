// Whether this process has started using a GPU (use_device): from then on
// host buffers are page-locked, as in Caffe's GPU mode.
#pragma once

namespace xtrain::cuda {

bool gpu_in_use();
void mark_gpu_in_use();

}  // namespace xtrain::cuda
