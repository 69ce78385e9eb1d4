// The GPU kernels of LSTMUnit: its functors (layers/lstm_unit_ops.hpp), which
// the CPU loop also runs, through the one-thread-per-index kernel of
// for_each_index_kernel.cuh.
#include "cuda/for_each_index_kernel.cuh"
#include "layers/lstm_unit_ops.hpp"

namespace xtrain::cuda {

template void for_each_index(std::int64_t, const ops::LstmUnitForward&);
template void for_each_index(std::int64_t, const ops::LstmUnitBackward&);

}  // namespace xtrain::cuda
