// The fast LRN kernels. ACROSS_CHANNELS runs in parallel over (image, block
// of up to kPixelBlock pixels): each block slides its channel window down the
// channels with a running sum of one block, the pixels as the vector lanes,
// and finishes each channel (power, output) while it is in cache.
// The running sums add and drop the same terms in the same order as the
// reference, computing each square (or ratio) where the reference reads it
// from a zero-padded copy; the padding channels, which add zero, are skipped.
// WITHIN_CHANNEL runs the reference's per-plane steps in parallel over planes.
#include "layers/lrn_kernels.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/parallel_loop.hpp"
#include "layers/lrn_steps.hpp"
#include "xtrain/cpu_threads.hpp"

namespace xtrain {
namespace {

// Pixel blocks: up to kPixelBlock pixels (whole planes, mostly: measured,
// long contiguous runs beat L1-sized blocks, whose many short streams the
// prefetcher follows badly), split down to kMinPixelBlock when there are too
// few images to keep every thread busy.
constexpr int kPixelBlock = 4096;
constexpr int kMinPixelBlock = 512;

// The (image, pixel block) work items of ACROSS_CHANNELS.
struct PixelBlocks {
  std::size_t plane;
  std::size_t image;
  std::size_t block;
  int per_image;

  explicit PixelBlocks(const LrnShape& shape)
      : plane(static_cast<std::size_t>(shape.height) * shape.width), image(shape.channels * plane) {
    const std::size_t wanted_items = 2 * static_cast<std::size_t>(cpu_threads());
    const std::size_t wanted_per_image = (wanted_items + shape.num - 1) / std::max(shape.num, 1);
    std::size_t blocks = (plane + kPixelBlock - 1) / kPixelBlock;
    const std::size_t most_blocks = (plane + kMinPixelBlock - 1) / kMinPixelBlock;
    blocks = std::max(blocks, std::min(wanted_per_image, most_blocks));
    blocks = std::max<std::size_t>(blocks, 1);
    block = (plane + blocks - 1) / blocks;
    per_image = static_cast<int>((plane + block - 1) / block);
  }

  // The first value of item `i` in the (N, C, H, W) array, and its pixel count.
  std::size_t offset(std::int64_t i) const {
    return (i / per_image) * image + (i % per_image) * block;
  }
  int length(std::int64_t i) const {
    const std::size_t first = (i % per_image) * block;
    return static_cast<int>(std::min(block, plane - first));
  }
};

// The scale of every channel of one pixel block (all pointers at the
// block's first pixel of channel 0), channel after channel:
// visit(c, scale of channel c, `length` values). Forward and backward (which
// recomputes the scales rather than keeping them) run this one code.
template <typename Visit>
void across_channel_scales(const LrnParameters& lrn, int channels, std::size_t plane, int length,
                           const float* input, Visit visit) {
  const int pre_pad = (lrn.size - 1) / 2;
  const float alpha_over_size = lrn.alpha / static_cast<float>(lrn.size);
  alignas(64) float current[kPixelBlock];
  // current += factor * (square of `channel`); channels outside add zero.
  auto add_squares = [&](float factor, int channel) {
    if (channel < 0 || channel >= channels) return;
    const float* __restrict x = input + channel * plane;
    for (int i = 0; i < length; ++i) current[i] += factor * (x[i] * x[i]);
  };
  std::fill(current, current + length, lrn.k);
  for (int c = -pre_pad; c < pre_pad; ++c) add_squares(alpha_over_size, c);
  for (int c = 0; c < channels; ++c) {
    if (c > 0) add_squares(-alpha_over_size, c - 1 - pre_pad);
    add_squares(alpha_over_size, c + pre_pad);
    visit(c, static_cast<const float*>(current));
  }
}

// One pixel block of one image, all channels, each finished while its
// scale is in cache.
void across_channel_forward_block(const LrnParameters& lrn, int channels, std::size_t plane,
                                  int length, const float* input, float* output) {
  alignas(64) float power[kPixelBlock];
  across_channel_scales(lrn, channels, plane, length, input, [&](int c, const float* scale) {
    lrn_power(lrn.beta, scale, length, power);
    const std::size_t at = c * plane;
    const float* __restrict x = input + at;
    const float* __restrict p = power;
    float* __restrict y = output + at;
    for (int i = 0; i < length; ++i) y[i] = x[i] * p[i];
  });
}

// input_diff = output_diff * power - 2 alpha beta / n * input * (channel
// window sum of output_diff * output / scale), for one pixel block. The
// ratios of the channels in the window live in `ring`, scratch of size *
// length values: channel c in row c mod size (the channel entering the
// window never lands on the row of one still in it). `scales` holds the
// block's scales, channel c's `length` values from c * length on.
void across_channel_backward_block(const LrnParameters& lrn, int channels, std::size_t plane,
                                   int length, const float* input, const float* output,
                                   const float* output_diff, const float* scales, float* ring,
                                   float* input_diff) {
  const int pre_pad = (lrn.size - 1) / 2;
  const float factor = 2.0f * lrn.alpha * lrn.beta / static_cast<float>(lrn.size);
  auto ring_row = [&](int channel) { return ring + (channel % lrn.size) * length; };
  alignas(64) float accumulated[kPixelBlock];
  alignas(64) float power[kPixelBlock];
  std::fill(accumulated, accumulated + length, 0.0f);
  // accumulated += ratio of `channel`, stored in its ring row; channels
  // outside add zero.
  auto add_ratios = [&](int channel) {
    if (channel < 0 || channel >= channels) return;
    const std::size_t at = channel * plane;
    const float* __restrict top = output + at;
    const float* __restrict top_diff = output_diff + at;
    const float* __restrict s = scales + static_cast<std::size_t>(channel) * length;
    float* __restrict ratio = ring_row(channel);
    for (int i = 0; i < length; ++i) {
      ratio[i] = top_diff[i] * top[i] / s[i];
      accumulated[i] += ratio[i];
    }
  };
  for (int c = -pre_pad; c < pre_pad; ++c) add_ratios(c);
  for (int c = 0; c < channels; ++c) {
    add_ratios(c + pre_pad);
    const std::size_t at = c * plane;
    const float* __restrict top_diff = output_diff + at;
    // Forward's power of this channel, recomputed from the same scale.
    lrn_power(lrn.beta, scales + static_cast<std::size_t>(c) * length, length, power);
    const float* __restrict p = power;
    const float* __restrict x = input + at;
    float* __restrict dx = input_diff + at;
    for (int i = 0; i < length; ++i) {
      const float direct = top_diff[i] * p[i];
      dx[i] = direct - factor * x[i] * accumulated[i];
    }
    const int leaving = c - pre_pad;
    if (leaving >= 0) {
      const float* __restrict ratio = ring_row(leaving);
      for (int i = 0; i < length; ++i) accumulated[i] -= ratio[i];
    }
  }
}

// Forward's scale and power of one plane, within its channel: the scale into
// `scale`, the power into scratch[0, plane), which it returns; scratch
// [0, 2 plane) is the window sums' work space (the squares are done with
// when the power is written).
const float* within_channel_power(const LrnParameters& lrn, const LrnShape& shape,
                                  const float* input, float* scratch, float* scale) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  lrn_within_channel_scale_plane(lrn, shape.height, shape.width, input, scratch, scratch + plane,
                                 scale);
  lrn_power(lrn.beta, scale, plane, scratch);
  return scratch;
}

// ACROSS_CHANNELS: body(blocks, at, length) for every block of pixels of
// every image (its first value `at`, its pixel count), in parallel.
template <typename Body>
void for_each_pixel_block(const LrnShape& shape, Body body) {
  const PixelBlocks blocks(shape);
  const std::size_t work = static_cast<std::size_t>(shape.channels) * blocks.block * 8;
  parallel_for(static_cast<std::int64_t>(shape.num) * blocks.per_image, work,
               [&](std::int64_t i) { body(blocks, blocks.offset(i), blocks.length(i)); });
}

// WITHIN_CHANNEL: body(at, plane, scratch) for every channel plane (its first
// value `at`, its size), in parallel, with a per-thread scratch of
// `scratch_planes` planes.
template <typename Body>
void for_each_plane(const LrnParameters& lrn, const LrnShape& shape, std::size_t scratch_planes,
                    Body body) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  const std::size_t work = plane * (2 * lrn.size + 8);
  parallel_for(static_cast<std::int64_t>(shape.num) * shape.channels, work, [&](std::int64_t p) {
    thread_local std::vector<float> scratch;
    if (scratch.size() < scratch_planes * plane) scratch.resize(scratch_planes * plane);
    body(p * plane, plane, scratch.data());
  });
}

}  // namespace

void lrn_forward(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                 float* output) {
  if (lrn.across_channels) {
    for_each_pixel_block(shape, [&](const PixelBlocks& blocks, std::size_t at, int length) {
      across_channel_forward_block(lrn, shape.channels, blocks.plane, length, input + at,
                                   output + at);
    });
    return;
  }
  for_each_plane(lrn, shape, 3, [&](std::size_t at, std::size_t plane, float* scratch) {
    const float* power = within_channel_power(lrn, shape, input + at, scratch, scratch + 2 * plane);
    for (std::size_t i = 0; i < plane; ++i) output[at + i] = input[at + i] * power[i];
  });
}

void lrn_backward(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                  const float* output, const float* output_diff, float* input_diff) {
  if (lrn.across_channels) {
    for_each_pixel_block(shape, [&](const PixelBlocks& blocks, std::size_t at, int length) {
      thread_local std::vector<float> ring;
      thread_local std::vector<float> scales;
      const std::size_t needed = static_cast<std::size_t>(lrn.size) * blocks.block;
      if (ring.size() < needed) ring.resize(needed);
      const std::size_t scale_count = static_cast<std::size_t>(shape.channels) * length;
      if (scales.size() < scale_count) scales.resize(scale_count);
      // Forward's scales of this block, recomputed by forward's code.
      across_channel_scales(
          lrn, shape.channels, blocks.plane, length, input + at, [&](int c, const float* scale) {
            std::copy(scale, scale + length, scales.data() + static_cast<std::size_t>(c) * length);
          });
      across_channel_backward_block(lrn, shape.channels, blocks.plane, length, input + at,
                                    output + at, output_diff + at, scales.data(), ring.data(),
                                    input_diff + at);
    });
    return;
  }
  for_each_plane(lrn, shape, 4, [&](std::size_t at, std::size_t plane, float* scratch) {
    // Forward's scale and power of this plane, recomputed by forward's code
    // (the power into scratch the step below overwrites after this loop).
    float* scale = scratch + 3 * plane;
    const float* power = within_channel_power(lrn, shape, input + at, scratch, scale);
    for (std::size_t i = 0; i < plane; ++i) input_diff[at + i] = output_diff[at + i] * power[i];
    lrn_within_channel_backward_plane(lrn, shape.height, shape.width, input + at, output + at,
                                      output_diff + at, scale, scratch, scratch + plane,
                                      scratch + 2 * plane, input_diff + at);
  });
}

}  // namespace xtrain
