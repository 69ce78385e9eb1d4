#include "core/random_fill.hpp"

#include "core/parallel_loop.hpp"

namespace xtrain {

void philox_fill_cpu(const PhiloxFill& fill, float* out, std::size_t n) {
  const std::int64_t blocks = static_cast<std::int64_t>((n + 3) / 4);
  // ~40 integer operations per Philox block, ~80 more per normal pair.
  const std::size_t work = fill.distribution.kind == RandomDrawKind::kNormal ? 200 : 40;
  parallel_for(blocks, work, [&](std::int64_t block) {
    fill.fill_block(static_cast<std::uint64_t>(block), out, n);
  });
}

}  // namespace xtrain
