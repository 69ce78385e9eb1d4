// Owners of cuDNN descriptors and of a grow-only device buffer, for the
// layers that call cuDNN (convolution, pooling, LRN, softmax). A layer
// creates its descriptors once and re-sets them on reshape; the destructors
// release them and never throw.
//
// All tensors here are float, plain NCHW (w fastest), as the blobs store them.
#pragma once

#include <cudnn.h>

#include <cstddef>

namespace xtrain::cuda {

// What every descriptor owner below shares: one cuDNN descriptor, created by
// the owner's constructor and destroyed by its destructor, never copied.
template <typename Descriptor>
class CudnnDescriptor {
 public:
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  Descriptor get() const { return descriptor_; }

 protected:
  CudnnDescriptor() = default;
  ~CudnnDescriptor() = default;
  Descriptor descriptor_ = nullptr;
};

// cudnnTensorDescriptor_t of a dense float (n, c, h, w) array. Throws
// xtrain::Error if cuDNN rejects the shape (e.g. more than 2^31 values).
class CudnnTensor : public CudnnDescriptor<cudnnTensorDescriptor_t> {
 public:
  CudnnTensor();
  ~CudnnTensor();
  void set(int n, int c, int h, int w);
};

// cudnnFilterDescriptor_t of float (k, c, h, w) filters in NCHW order: k
// output channels, c input channels per group.
class CudnnFilter : public CudnnDescriptor<cudnnFilterDescriptor_t> {
 public:
  CudnnFilter();
  ~CudnnFilter();
  void set(int k, int c, int h, int w);
};

// cudnnConvolutionDescriptor_t of a 2-D cross-correlation (Caffe's
// convolution does not flip the kernel) in float, in `group` groups. Under
// --gpu_math=fp32 (the default) with the FMA math type: no TF32 or
// half-precision tensor-core conversion, so the GPU's results stay within
// float rounding of the CPU's; under tf32 with cuDNN's default math type,
// which allows TF32 tensor cores (set() reads xtrain/gpu_math.hpp).
class CudnnConvolutionDescriptor : public CudnnDescriptor<cudnnConvolutionDescriptor_t> {
 public:
  CudnnConvolutionDescriptor();
  ~CudnnConvolutionDescriptor();
  void set(int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
           int group);
};

class CudnnPoolingDescriptor : public CudnnDescriptor<cudnnPoolingDescriptor_t> {
 public:
  CudnnPoolingDescriptor();
  ~CudnnPoolingDescriptor();
  void set(cudnnPoolingMode_t mode, int kernel_h, int kernel_w, int pad_h, int pad_w, int stride_h,
           int stride_w);
};

class CudnnLrnDescriptor : public CudnnDescriptor<cudnnLRNDescriptor_t> {
 public:
  CudnnLrnDescriptor();
  ~CudnnLrnDescriptor();
  void set(unsigned size, double alpha, double beta, double k);
};

// Device memory that grows to the largest size asked for and is kept until
// the owner goes (through core/device_memory.hpp, the allocator SyncedMemory
// uses). Growing frees the old block first: its contents are not kept.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  // A block of at least `bytes`; null when bytes is 0 and nothing was held.
  void* reserve(std::size_t bytes);
  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  void release();

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  int device_ = -1;
};

// The pointers cuDNN takes for alpha and beta with float tensors.
inline const float* cudnn_one() {
  static const float one = 1.0f;
  return &one;
}
inline const float* cudnn_zero() {
  static const float zero = 0.0f;
  return &zero;
}

}  // namespace xtrain::cuda
