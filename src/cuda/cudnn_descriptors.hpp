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

// cudnnTensorDescriptor_t of a dense float (n, c, h, w) array. Throws
// xtrain::Error if cuDNN rejects the shape (e.g. more than 2^31 values).
class CudnnTensor {
 public:
  CudnnTensor();
  ~CudnnTensor();
  CudnnTensor(const CudnnTensor&) = delete;
  CudnnTensor& operator=(const CudnnTensor&) = delete;
  void set(int n, int c, int h, int w);
  cudnnTensorDescriptor_t get() const { return descriptor_; }

 private:
  cudnnTensorDescriptor_t descriptor_ = nullptr;
};

// cudnnFilterDescriptor_t of float (k, c, h, w) filters in NCHW order: k
// output channels, c input channels per group.
class CudnnFilter {
 public:
  CudnnFilter();
  ~CudnnFilter();
  CudnnFilter(const CudnnFilter&) = delete;
  CudnnFilter& operator=(const CudnnFilter&) = delete;
  void set(int k, int c, int h, int w);
  cudnnFilterDescriptor_t get() const { return descriptor_; }

 private:
  cudnnFilterDescriptor_t descriptor_ = nullptr;
};

// cudnnConvolutionDescriptor_t of a 2-D cross-correlation (Caffe's
// convolution does not flip the kernel) in float, in `group` groups. Under
// --gpu_math=fp32 (the default) with the FMA math type: no TF32 or
// half-precision tensor-core conversion, so the GPU's results stay within
// float rounding of the CPU's; under tf32 with cuDNN's default math type,
// which allows TF32 tensor cores (set() reads xtrain/gpu_math.hpp).
class CudnnConvolutionDescriptor {
 public:
  CudnnConvolutionDescriptor();
  ~CudnnConvolutionDescriptor();
  CudnnConvolutionDescriptor(const CudnnConvolutionDescriptor&) = delete;
  CudnnConvolutionDescriptor& operator=(const CudnnConvolutionDescriptor&) = delete;
  void set(int pad_h, int pad_w, int stride_h, int stride_w, int dilation_h, int dilation_w,
           int group);
  cudnnConvolutionDescriptor_t get() const { return descriptor_; }

 private:
  cudnnConvolutionDescriptor_t descriptor_ = nullptr;
};

class CudnnPoolingDescriptor {
 public:
  CudnnPoolingDescriptor();
  ~CudnnPoolingDescriptor();
  CudnnPoolingDescriptor(const CudnnPoolingDescriptor&) = delete;
  CudnnPoolingDescriptor& operator=(const CudnnPoolingDescriptor&) = delete;
  void set(cudnnPoolingMode_t mode, int kernel_h, int kernel_w, int pad_h, int pad_w, int stride_h,
           int stride_w);
  cudnnPoolingDescriptor_t get() const { return descriptor_; }

 private:
  cudnnPoolingDescriptor_t descriptor_ = nullptr;
};

class CudnnLrnDescriptor {
 public:
  CudnnLrnDescriptor();
  ~CudnnLrnDescriptor();
  CudnnLrnDescriptor(const CudnnLrnDescriptor&) = delete;
  CudnnLrnDescriptor& operator=(const CudnnLrnDescriptor&) = delete;
  void set(unsigned size, double alpha, double beta, double k);
  cudnnLRNDescriptor_t get() const { return descriptor_; }

 private:
  cudnnLRNDescriptor_t descriptor_ = nullptr;
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
