// Random streams. Every random number in a run comes from a stream derived
// from the solver's random_seed, so the same seed gives the same bits; each
// consumer (a layer's fillers, a Dropout mask, a data transform) owns its
// stream, so adding one consumer does not shift the numbers of another.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

class XTRAIN_API RandomStream {
 public:
  explicit RandomStream(std::uint64_t seed = 1701) : engine_(fold(seed)) {}

  void reseed(std::uint64_t seed) { engine_.seed(fold(seed)); }

  // Fill out[0..n) from U(low, high), N(mean, stddev), Bernoulli(p).
  void uniform(std::size_t n, float low, float high, float* out);
  void gaussian(std::size_t n, float mean, float stddev, float* out);
  void bernoulli(std::size_t n, float p, unsigned* out);
  // One integer in [0, bound).
  std::uint32_t below(std::uint32_t bound);

  std::mt19937& engine() { return engine_; }

  // The full engine state as text, for snapshots.
  std::string state() const;
  void set_state(const std::string& state);

 private:
  // mt19937 takes 32 bits of seed; both halves of ours count.
  static std::uint32_t fold(std::uint64_t seed) {
    return static_cast<std::uint32_t>(seed ^ (seed >> 32));
  }
  std::mt19937 engine_;
};

// A seed for the sub-stream named by (base_seed, tag, index): distinct tags
// and indices give unrelated streams.
XTRAIN_API std::uint64_t derive_seed(std::uint64_t base_seed, const std::string& tag,
                                     std::uint64_t index = 0);

// A seed from the clock and the process id, for random_seed < 0.
XTRAIN_API std::uint64_t nondeterministic_seed();

}  // namespace xtrain
