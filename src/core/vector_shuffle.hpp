// Two-source lane shuffles of GCC vector-extension types:
// XTRAIN_SHUFFLE2(a, b, mask)[i] = (a ++ b)[mask[i]], lanes of a then of b.
//
// GCC has __builtin_shuffle for this; clang does not (its
// __builtin_shufflevector takes constant indices only). The library is built
// with GCC, and there the builtin stays; the clang builds (the fuzzing build,
// fuzz/) pick the lanes one by one, which is slower but the same values. A
// statement expression, not a function: vectors wider than the caller's
// baseline ISA must not cross a call boundary (their ABI depends on it).
#pragma once

#if defined(__clang__)
#define XTRAIN_SHUFFLE2(a, b, mask)                                                             \
  ({                                                                                            \
    const auto shuffle_a_ = (a);                                                                \
    const auto shuffle_b_ = (b);                                                                \
    const auto shuffle_mask_ = (mask);                                                          \
    constexpr int shuffle_lanes_ = sizeof(shuffle_a_) / sizeof(shuffle_a_[0]);                  \
    auto shuffle_out_ = shuffle_a_;                                                             \
    for (int shuffle_i_ = 0; shuffle_i_ < shuffle_lanes_; ++shuffle_i_) {                       \
      const int lane_ = static_cast<int>(shuffle_mask_[shuffle_i_]) & (2 * shuffle_lanes_ - 1); \
      shuffle_out_[shuffle_i_] =                                                                \
          lane_ < shuffle_lanes_ ? shuffle_a_[lane_] : shuffle_b_[lane_ - shuffle_lanes_];      \
    }                                                                                           \
    shuffle_out_;                                                                               \
  })
#else
#define XTRAIN_SHUFFLE2(a, b, mask) __builtin_shuffle((a), (b), (mask))
#endif
