// Blobs filled with independent draws of one distribution per element, from
// Philox4x32-10 (src/core/philox.hpp), by the CPU loop below or the CUDA
// kernel of src/layers/random_kernels.cu: one functor, the same bits.
//
// Element i of stream s (a seed's several blobs: DummyData's top index) is
// drawn from the block b = i div 4 of
//   w = philox4x32_10(counter = (b mod 2^32, b div 2^32, s, 0), key = seed),
//   uniform: x_i = uniform_from_bits(w_(i mod 4))                  in [0, 1)
//   normal:  (x_4b, x_4b+1) = box_muller(w_0, w_1), (x_4b+2, x_4b+3) = box_muller(w_2, w_3)
// (src/core/box_muller.hpp: bit-exact on both devices), and the element is
//   y_i = fma(scale, x_i, offset),
// one rounding: U(min, max) is scale = max - min, offset = min (values in
// [min, max], max only by rounding), N(mean, std) is scale = std, offset =
// mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/box_muller.hpp"
#include "core/host_device.hpp"
#include "core/philox.hpp"

namespace xtrain {

class Blob;
class FillerParameter;

enum class RandomDrawKind : std::uint32_t { kUniform, kNormal };

struct RandomDistribution {
  RandomDrawKind kind = RandomDrawKind::kUniform;
  float scale = 1.0f;
  float offset = 0.0f;
};

struct PhiloxFill {
  RandomDistribution distribution;
  Philox4x32Key key;
  std::uint32_t stream = 0;

  // Elements 4 * block .. 4 * block + 3.
  XTRAIN_HOST_DEVICE Philox4x32Block draws(std::uint64_t block) const {
    const Philox4x32Block counter{
        {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), stream, 0u}};
    return philox4x32_10(counter, key);
  }

  // out[4 * block .. min(4 * block + 4, n)).
  XTRAIN_HOST_DEVICE void fill_block(std::uint64_t block, float* out, std::size_t n) const {
    const Philox4x32Block w = draws(block);
    float x[4];
    if (distribution.kind == RandomDrawKind::kNormal) {
      const NormalPair first = box_muller(w.word[0], w.word[1]);
      const NormalPair second = box_muller(w.word[2], w.word[3]);
      x[0] = first.first;
      x[1] = first.second;
      x[2] = second.first;
      x[3] = second.second;
    } else {
      for (int k = 0; k < 4; ++k) x[k] = uniform_from_bits(w.word[k]);
    }
    const std::size_t begin = static_cast<std::size_t>(block) * 4;
    const std::size_t count = n - begin < 4 ? n - begin : 4;
    for (std::size_t k = 0; k < count; ++k) {
      out[begin + k] = exact_float::fma(distribution.scale, x[k], distribution.offset);
    }
  }
};

// out[0..n) on the CPU threads.
void philox_fill_cpu(const PhiloxFill& fill, float* out, std::size_t n);

// The per-element distribution of a filler (src/core/filler.cpp) for `blob`:
// uniform, xavier, gaussian without `sparse`, msra. None for the fillers that
// are not independent draws per element (constant, bilinear, sparse gaussian,
// positive_unitball's row sums). Throws xtrain::Error for the parameters the
// filler itself would reject.
std::optional<RandomDistribution> per_element_distribution(const FillerParameter& param,
                                                           const Blob& blob);

}  // namespace xtrain
