// The GPU kernels of the fused LSTM and RNN steps: their functors
// (layers/recurrent_step_ops.hpp), which the CPU loop also runs, through the
// one-thread-per-index kernel of for_each_index_kernel.cuh.
#include "cuda/for_each_index_kernel.cuh"
#include "layers/recurrent_step_ops.hpp"

namespace xtrain::cuda {

template void for_each_index(std::int64_t, const ops::LstmStepForward&);
template void for_each_index(std::int64_t, const ops::LstmStepBackward&);
template void for_each_index(std::int64_t, const ops::RnnStepForward&);
template void for_each_index(std::int64_t, const ops::RnnStepBackward&);
template void for_each_index(std::int64_t, const ops::ContScale&);

}  // namespace xtrain::cuda
