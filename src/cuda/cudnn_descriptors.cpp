#include "cuda/cudnn_descriptors.hpp"

#include "core/device_memory.hpp"
#include "cuda/cuda_check.hpp"
#include "xtrain/gpu_math.hpp"

namespace xtrain::cuda {

CudnnTensor::CudnnTensor() { XTRAIN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descriptor_)); }
CudnnTensor::~CudnnTensor() { cudnnDestroyTensorDescriptor(descriptor_); }
void CudnnTensor::set(int n, int c, int h, int w) {
  XTRAIN_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(descriptor_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
}

CudnnFilter::CudnnFilter() { XTRAIN_CUDNN_CHECK(cudnnCreateFilterDescriptor(&descriptor_)); }
CudnnFilter::~CudnnFilter() { cudnnDestroyFilterDescriptor(descriptor_); }
void CudnnFilter::set(int k, int c, int h, int w) {
  // Note the argument order: data type before format (the tensor setter has
  // them the other way round).
  XTRAIN_CUDNN_CHECK(
      cudnnSetFilter4dDescriptor(descriptor_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, h, w));
}

CudnnConvolutionDescriptor::CudnnConvolutionDescriptor() {
  XTRAIN_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&descriptor_));
}
CudnnConvolutionDescriptor::~CudnnConvolutionDescriptor() {
  cudnnDestroyConvolutionDescriptor(descriptor_);
}
void CudnnConvolutionDescriptor::set(int pad_h, int pad_w, int stride_h, int stride_w,
                                     int dilation_h, int dilation_w, int group) {
  XTRAIN_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(descriptor_, pad_h, pad_w, stride_h, stride_w,
                                                     dilation_h, dilation_w,
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  XTRAIN_CUDNN_CHECK(cudnnSetConvolutionGroupCount(descriptor_, group));
  // fp32: FMA math, no tensor-core conversion at all; tf32: the default
  // math, which lets cuDNN use TF32 tensor cores (xtrain/gpu_math.hpp).
  XTRAIN_CUDNN_CHECK(cudnnSetConvolutionMathType(
      descriptor_, gpu_math() == GpuMath::kTf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
}

CudnnPoolingDescriptor::CudnnPoolingDescriptor() {
  XTRAIN_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&descriptor_));
}
CudnnPoolingDescriptor::~CudnnPoolingDescriptor() { cudnnDestroyPoolingDescriptor(descriptor_); }
void CudnnPoolingDescriptor::set(cudnnPoolingMode_t mode, int kernel_h, int kernel_w, int pad_h,
                                 int pad_w, int stride_h, int stride_w) {
  // NOT_PROPAGATE_NAN: Caffe's `>` comparison never picks a NaN as the max.
  XTRAIN_CUDNN_CHECK(cudnnSetPooling2dDescriptor(descriptor_, mode, CUDNN_NOT_PROPAGATE_NAN,
                                                 kernel_h, kernel_w, pad_h, pad_w, stride_h,
                                                 stride_w));
}

CudnnLrnDescriptor::CudnnLrnDescriptor() {
  XTRAIN_CUDNN_CHECK(cudnnCreateLRNDescriptor(&descriptor_));
}
CudnnLrnDescriptor::~CudnnLrnDescriptor() { cudnnDestroyLRNDescriptor(descriptor_); }
void CudnnLrnDescriptor::set(unsigned size, double alpha, double beta, double k) {
  XTRAIN_CUDNN_CHECK(cudnnSetLRNDescriptor(descriptor_, size, alpha, beta, k));
}

DeviceScratch::~DeviceScratch() { release(); }

void* DeviceScratch::reserve(std::size_t bytes) {
  if (bytes <= size_) return data_;
  release();
  data_ = device_memory::allocate(bytes, &device_);
  size_ = bytes;
  return data_;
}

void DeviceScratch::release() {
  if (data_ == nullptr) return;
  try {
    device_memory::free(data_, device_);
  } catch (...) {  // called from the destructor: a failing free only leaks
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace xtrain::cuda
