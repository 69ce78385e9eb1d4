// The CUDA side of src/layers/dropout_mask.hpp and src/core/random_fill.hpp:
// one thread per Philox block of four elements, grid-stride.
#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/random_kernels.hpp"

namespace xtrain::cuda {
namespace {

cudaStream_t on_thread_stream(cudaStream_t stream) { return stream ? stream : cuda::stream(); }

__global__ void dropout_mask_kernel(DropoutMask draw, std::uint64_t first_item,
                                    std::uint64_t blocks_per_item, std::int64_t total_blocks,
                                    std::size_t per_item, unsigned* mask) {
  XTRAIN_GRID_STRIDE_LOOP(i, total_blocks) {
    const std::uint64_t item = static_cast<std::uint64_t>(i) / blocks_per_item;
    const std::uint64_t block = static_cast<std::uint64_t>(i) % blocks_per_item;
    draw.draw_block(first_item + item, block, mask + item * per_item, per_item);
  }
}

__global__ void philox_fill_kernel(PhiloxFill fill, std::int64_t blocks, float* out,
                                   std::size_t n) {
  XTRAIN_GRID_STRIDE_LOOP(block, blocks) {
    fill.fill_block(static_cast<std::uint64_t>(block), out, n);
  }
}

}  // namespace

void dropout_draw_mask(const DropoutMask& draw, std::uint64_t first_item, std::size_t items,
                       std::size_t per_item, unsigned* mask, cudaStream_t stream) {
  if (items == 0 || per_item == 0) return;
  const std::uint64_t blocks_per_item = (per_item + 3) / 4;
  const std::size_t total_blocks = items * blocks_per_item;
  dropout_mask_kernel<<<blocks_for(total_blocks), kThreadsPerBlock, 0, on_thread_stream(stream)>>>(
      draw, first_item, blocks_per_item, static_cast<std::int64_t>(total_blocks), per_item, mask);
  check_launch();
}

void philox_fill(const PhiloxFill& fill, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t blocks = (n + 3) / 4;
  philox_fill_kernel<<<blocks_for(blocks), kThreadsPerBlock, 0, on_thread_stream(stream)>>>(
      fill, static_cast<std::int64_t>(blocks), out, n);
  check_launch();
}

}  // namespace xtrain::cuda
