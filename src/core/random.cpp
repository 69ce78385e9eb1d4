#include "xtrain/random.hpp"

#include <unistd.h>

#include <chrono>
#include <sstream>

#include "xtrain/error.hpp"

namespace xtrain {

void RandomStream::uniform(std::size_t n, float low, float high, float* out) {
  XTRAIN_CHECK(low <= high, "uniform distribution needs min <= max, got min = ", low,
               ", max = ", high);
  std::uniform_real_distribution<float> distribution(low, high);
  for (std::size_t i = 0; i < n; ++i) out[i] = distribution(engine_);
}

void RandomStream::gaussian(std::size_t n, float mean, float stddev, float* out) {
  XTRAIN_CHECK(stddev > 0, "gaussian distribution needs std > 0, got ", stddev);
  std::normal_distribution<float> distribution(mean, stddev);
  for (std::size_t i = 0; i < n; ++i) out[i] = distribution(engine_);
}

void RandomStream::bernoulli(std::size_t n, float p, unsigned* out) {
  XTRAIN_CHECK(p >= 0 && p <= 1, "Bernoulli probability must be in [0, 1], got ", p);
  std::bernoulli_distribution distribution(p);
  for (std::size_t i = 0; i < n; ++i) out[i] = distribution(engine_) ? 1u : 0u;
}

std::uint32_t RandomStream::below(std::uint32_t bound) {
  XTRAIN_ASSERT(bound > 0);
  std::uniform_int_distribution<std::uint32_t> distribution(0, bound - 1);
  return distribution(engine_);
}

std::string RandomStream::state() const {
  std::ostringstream out;
  out << engine_;
  return out.str();
}

void RandomStream::set_state(const std::string& state) {
  std::istringstream in(state);
  in >> engine_;
  XTRAIN_CHECK(!in.fail(), "corrupt random-stream state in snapshot");
}

std::uint64_t derive_seed(std::uint64_t base_seed, const std::string& tag, std::uint64_t index) {
  // FNV-1a over the tag, mixed with seed and index by splitmix64's finaliser:
  // cheap, stable across platforms and compilers.
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : tag) hash = (hash ^ c) * 1099511628211ull;
  std::uint64_t z = base_seed ^ (hash + 0x9e3779b97f4a7c15ull + (index << 6) + (index >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t nondeterministic_seed() {
  const auto now = std::chrono::high_resolution_clock::now().time_since_epoch().count();
  return derive_seed(static_cast<std::uint64_t>(now), "clock", static_cast<std::uint64_t>(getpid()));
}

}  // namespace xtrain
