#include "layers/cudnn_convolution.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/cuda_context.hpp"
#include "xtrain/cudnn_options.hpp"
#include "xtrain/error.hpp"
#include "xtrain/gpu_math.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::cuda {
namespace {

// The algorithm picked for one pass and the workspace it needs.
template <typename Algo>
struct AlgorithmChoice {
  bool found = false;
  Algo algo{};
  std::size_t workspace = 0;
  // Among the runnable algorithms: the largest workspace within the cap (what
  // a timed search needs to try them all), and the runnable one needing the
  // least workspace above the cap (the last resort).
  std::size_t largest_fitting = 0;
  bool has_over_cap = false;
  Algo smallest_over_cap{};
  std::size_t smallest_over_cap_workspace = 0;
};

// Whether an algorithm computes as --gpu_math allows. The descriptor asks
// for FMA math under fp32 (an algorithm reported with a tensor-op math type
// would compute in TF32 or half precision) and for the default math, which
// permits TF32 tensor cores, under tf32. Down-conversion to half precision
// (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) is never wanted.
bool keeps_float_precision(cudnnMathType_t math) {
  if (gpu_math() == GpuMath::kTf32) return math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  return math == CUDNN_DEFAULT_MATH || math == CUDNN_FMA_MATH;
}

// `results` best first (cuDNN's ranking or measured times): the first that
// ran (status SUCCESS), keeps float precision and whose workspace, asked of
// cuDNN with `workspace_of(algo, &bytes)`, fits `cap`.
template <typename Perf, typename WorkspaceOf>
auto first_fitting(const std::vector<Perf>& results, std::size_t cap, WorkspaceOf workspace_of) {
  AlgorithmChoice<decltype(Perf::algo)> choice;
  for (const Perf& result : results) {
    if (result.status != CUDNN_STATUS_SUCCESS || !keeps_float_precision(result.mathType)) continue;
    std::size_t bytes = 0;
    if (workspace_of(result.algo, &bytes) != CUDNN_STATUS_SUCCESS) continue;
    if (bytes > cap) {
      if (!choice.has_over_cap || bytes < choice.smallest_over_cap_workspace) {
        choice.has_over_cap = true;
        choice.smallest_over_cap = result.algo;
        choice.smallest_over_cap_workspace = bytes;
      }
      continue;
    }
    choice.largest_fitting = std::max(choice.largest_fitting, bytes);
    if (!choice.found) {
      choice.found = true;
      choice.algo = result.algo;
      choice.workspace = bytes;
    }
  }
  return choice;
}

// Settles a heuristic choice that found nothing within the cap: the runnable
// algorithm with the smallest workspace, with a warning; none at all is an
// error (cuDNN cannot compute this shape).
template <typename Algo>
void settle(AlgorithmChoice<Algo>* choice, const std::string& where, const char* pass,
            std::size_t cap) {
  if (choice->found) return;
  XTRAIN_CHECK(choice->has_over_cap, where, ": cuDNN has no algorithm for the ", pass,
               " pass of this convolution");
  XLOG(WARNING) << where << ": no cuDNN " << pass << " algorithm fits the workspace cap of " << cap
                << " bytes (--cudnn_workspace_mb); using algorithm "
                << static_cast<int>(choice->smallest_over_cap) << ", which needs "
                << choice->smallest_over_cap_workspace << " bytes";
  choice->found = true;
  choice->algo = choice->smallest_over_cap;
  choice->workspace = choice->smallest_over_cap_workspace;
}

template <typename Algo>
void log_choice(const std::string& where, const char* pass, const AlgorithmChoice<Algo>& choice,
                bool timed) {
  XLOG(INFO) << where << ": cuDNN " << pass << " algorithm " << static_cast<int>(choice.algo)
             << " (workspace " << choice.workspace << " bytes, "
             << (timed ? "timed search" : "heuristic") << ")";
}

// One pass's algorithm: the first of cuDNN's heuristic ranking (`rank`, the
// *_v7 query) that fits the workspace cap; with --cudnn_algorithm_search=timed
// and something fitting, the first of cuDNN's measured ranking (`find`, the
// Find*Ex call, given the largest fitting workspace) instead; then settled
// (the smallest over the cap, with a warning, if none fits) and logged.
//   workspace_of(algo, &bytes), rank(count, &returned, results),
//   find(count, &returned, results, workspace_bytes): cuDNN statuses.
template <typename Perf, typename WorkspaceOf, typename Rank, typename Find>
auto choose_algorithm(const std::string& where, const char* pass, int count,
                      WorkspaceOf workspace_of, Rank rank, Find find) {
  const std::size_t cap = cudnn_workspace_limit_bytes();
  std::vector<Perf> results(static_cast<std::size_t>(count));
  int returned = 0;
  XTRAIN_CUDNN_CHECK(rank(count, &returned, results.data()));
  results.resize(static_cast<std::size_t>(returned));
  auto choice = first_fitting(results, cap, workspace_of);
  const bool timed = cudnn_algorithm_search() == CudnnAlgorithmSearch::kTimed && choice.found;
  if (timed) {
    results.assign(static_cast<std::size_t>(count), {});
    XTRAIN_CUDNN_CHECK(find(count, &returned, results.data(), choice.largest_fitting));
    results.resize(static_cast<std::size_t>(returned));
    auto fastest = first_fitting(results, cap, workspace_of);
    if (fastest.found) choice = fastest;
  }
  settle(&choice, where, pass, cap);
  log_choice(where, pass, choice, timed);
  return choice;
}

}  // namespace

CudnnConvolution::CudnnConvolution(std::string where) : where_(std::move(where)) {}

void CudnnConvolution::set_shape(const ConvolutionShape& shape) {
  if (has_shape_ && shape == shape_) return;
  has_shape_ = false;  // until every descriptor took the new shape
  const Im2colGeometry& g = shape.geometry;
  // An empty batch (N = 0, after a Filter that selected nothing): cuDNN
  // rejects such descriptors, and there is nothing to compute; the passes
  // return at once (the filter and bias gradients get nothing added).
  empty_ = shape.num == 0 || g.channels == 0 || shape.num_output == 0 ||
           static_cast<std::size_t>(g.height) * g.width == 0 ||
           static_cast<std::size_t>(shape.out_height()) * shape.out_width() == 0;
  if (empty_) {
    shape_ = shape;
    has_shape_ = true;
    return;
  }
  input_.set(shape.num, g.channels, g.height, g.width);
  output_.set(shape.num, shape.num_output, shape.out_height(), shape.out_width());
  input_bias_.set(1, g.channels, 1, 1);
  output_bias_.set(1, shape.num_output, 1, 1);
  filter_.set(shape.num_output, g.channels / shape.group, g.kernel_h, g.kernel_w);
  convolution_.set(g.pad_h, g.pad_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w,
                   shape.group);
  // cuDNN's output size is Caffe's (floor((in + 2p - extent) / s) + 1).
  int n = 0, c = 0, h = 0, w = 0;
  XTRAIN_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(convolution_.get(), input_.get(),
                                                           filter_.get(), &n, &c, &h, &w));
  XTRAIN_ASSERT(
      n == shape.num && c == shape.num_output && h == shape.out_height() && w == shape.out_width(),
      where_, ": cuDNN's output shape ", n, "x", c, "x", h, "x", w, " differs from the layer's ",
      shape.to_string());
  shape_ = shape;
  has_shape_ = true;
  forward_chosen_ = false;
  backward_data_chosen_ = false;
  backward_filter_chosen_ = false;
}

void CudnnConvolution::choose_forward(const float* x, const float* w, float* y) {
  cudnnHandle_t handle = cudnn_handle();
  int count = 0;
  XTRAIN_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  const auto choice = choose_algorithm<Perf>(
      where_, "forward", count,
      [&](cudnnConvolutionFwdAlgo_t algo, std::size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(
            handle, input_.get(), filter_.get(), convolution_.get(), output_.get(), algo, bytes);
      },
      [&](int n, int* returned, Perf* results) {
        return cudnnGetConvolutionForwardAlgorithm_v7(handle, input_.get(), filter_.get(),
                                                      convolution_.get(), output_.get(), n,
                                                      returned, results);
      },
      [&](int n, int* returned, Perf* results, std::size_t bytes) {
        // Runs each algorithm once, writing y (forward overwrites it anyway).
        DeviceScratch space;
        return cudnnFindConvolutionForwardAlgorithmEx(
            handle, input_.get(), x, filter_.get(), w, convolution_.get(), output_.get(), y, n,
            returned, results, space.reserve(bytes), bytes);
      });
  forward_algo_ = choice.algo;
  forward_workspace_ = choice.workspace;
  forward_chosen_ = true;
}

void CudnnConvolution::choose_backward_data(const float* dy, const float* w, float* dx) {
  cudnnHandle_t handle = cudnn_handle();
  int count = 0;
  XTRAIN_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  const auto choice = choose_algorithm<Perf>(
      where_, "backward-data", count,
      [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            handle, filter_.get(), output_.get(), convolution_.get(), input_.get(), algo, bytes);
      },
      [&](int n, int* returned, Perf* results) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, filter_.get(), output_.get(),
                                                           convolution_.get(), input_.get(), n,
                                                           returned, results);
      },
      [&](int n, int* returned, Perf* results, std::size_t bytes) {
        // Writes dx, which backward_data overwrites anyway.
        DeviceScratch space;
        return cudnnFindConvolutionBackwardDataAlgorithmEx(
            handle, filter_.get(), w, output_.get(), dy, convolution_.get(), input_.get(), dx, n,
            returned, results, space.reserve(bytes), bytes);
      });
  backward_data_algo_ = choice.algo;
  backward_data_workspace_ = choice.workspace;
  backward_data_chosen_ = true;
}

void CudnnConvolution::choose_backward_filter(const float* x, const float* dy) {
  cudnnHandle_t handle = cudnn_handle();
  int count = 0;
  XTRAIN_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  const auto choice = choose_algorithm<Perf>(
      where_, "backward-filter", count,
      [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            handle, input_.get(), output_.get(), convolution_.get(), filter_.get(), algo, bytes);
      },
      [&](int n, int* returned, Perf* results) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, input_.get(), output_.get(),
                                                             convolution_.get(), filter_.get(), n,
                                                             returned, results);
      },
      [&](int n, int* returned, Perf* results, std::size_t bytes) {
        // The search writes its filter gradient into a scratch copy: the real
        // one accumulates (beta = 1) and must not be clobbered. Workspace
        // first, then the float array at a 256-byte aligned offset.
        const std::size_t filter_offset = (bytes + 255) / 256 * 256;
        const std::size_t filter_bytes = shape_.weight_count() * sizeof(float);
        DeviceScratch space;
        auto* base = static_cast<char*>(space.reserve(filter_offset + filter_bytes));
        return cudnnFindConvolutionBackwardFilterAlgorithmEx(
            handle, input_.get(), x, output_.get(), dy, convolution_.get(), filter_.get(),
            base + filter_offset, n, returned, results, base, bytes);
      });
  backward_filter_algo_ = choice.algo;
  backward_filter_workspace_ = choice.workspace;
  backward_filter_chosen_ = true;
}

void CudnnConvolution::forward(const float* x, const float* w, const float* bias, float* y) {
  if (empty_) return;
  if (!forward_chosen_) choose_forward(x, w, y);
  void* space = workspace_.reserve(forward_workspace_);
  XTRAIN_CUDNN_CHECK(cudnnConvolutionForward(
      cudnn_handle(), cudnn_one(), input_.get(), x, filter_.get(), w, convolution_.get(),
      forward_algo_, space, forward_workspace_, cudnn_zero(), output_.get(), y));
  if (shape_.bias_term) add_bias(Side::kOutput, bias, y);
}

void CudnnConvolution::backward_data(const float* dy, const float* w, float* dx) {
  if (empty_) return;
  if (!backward_data_chosen_) choose_backward_data(dy, w, dx);
  void* space = workspace_.reserve(backward_data_workspace_);
  XTRAIN_CUDNN_CHECK(cudnnConvolutionBackwardData(
      cudnn_handle(), cudnn_one(), filter_.get(), w, output_.get(), dy, convolution_.get(),
      backward_data_algo_, space, backward_data_workspace_, cudnn_zero(), input_.get(), dx));
}

void CudnnConvolution::backward_filter(const float* x, const float* dy, float* dw) {
  if (empty_) return;
  if (!backward_filter_chosen_) choose_backward_filter(x, dy);
  void* space = workspace_.reserve(backward_filter_workspace_);
  // beta = 1: dw += dE/dw.
  XTRAIN_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      cudnn_handle(), cudnn_one(), input_.get(), x, output_.get(), dy, convolution_.get(),
      backward_filter_algo_, space, backward_filter_workspace_, cudnn_one(), filter_.get(), dw));
}

void CudnnConvolution::add_bias(Side side, const float* bias, float* data) {
  if (empty_) return;
  const bool input = side == Side::kInput;
  // C = alpha * A + beta * C with A the (1, C, 1, 1) bias broadcast over C.
  XTRAIN_CUDNN_CHECK(cudnnAddTensor(cudnn_handle(), cudnn_one(),
                                    input ? input_bias_.get() : output_bias_.get(), bias,
                                    cudnn_one(), input ? input_.get() : output_.get(), data));
}

void CudnnConvolution::accumulate_bias_gradient(Side side, const float* diff, float* bias_diff) {
  if (empty_) return;
  const bool input = side == Side::kInput;
  // db = alpha * sum over (n, h, w) of dy + beta * db, beta = 1 to accumulate.
  XTRAIN_CUDNN_CHECK(cudnnConvolutionBackwardBias(
      cudnn_handle(), cudnn_one(), input ? input_.get() : output_.get(), diff, cudnn_one(),
      input ? input_bias_.get() : output_bias_.get(), bias_diff));
}

}  // namespace xtrain::cuda
