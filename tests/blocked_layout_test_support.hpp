// Helpers for the tests that compare a net computed one way with the same
// net computed another (channel-blocked activations or not, the memory plan
// or not, oneDNN or GEMM convolutions).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/channel_blocked_layout.hpp"
#include "core/cpu_isa.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {

// The widths the channel-blocked layout has (nChw8c and nChw16c): tests of
// the blocked kernels run at both on any CPU.
constexpr int kChannelBlockWidths[] = {8, 16};

// `plain` values in the channel-blocked layout of `shape`, and back.
inline std::vector<float> to_blocked(const ChannelBlockedShape& shape,
                                     const std::vector<float>& plain) {
  std::vector<float> blocked(plain.size());
  plain_to_channel_blocked(shape, plain.data(), blocked.data());
  return blocked;
}

inline std::vector<float> to_plain(const ChannelBlockedShape& shape,
                                   const std::vector<float>& blocked) {
  std::vector<float> plain(blocked.size());
  channel_blocked_to_plain(shape, blocked.data(), plain.data());
  return plain;
}

// Sets channel_block() for one scope, then back to the width the process
// decided. Only around code that makes its own blobs and layers.
class ScopedChannelBlock {
 public:
  explicit ScopedChannelBlock(int block) { set_channel_block_for_testing(block); }
  ~ScopedChannelBlock() { set_channel_block_for_testing(0); }
  ScopedChannelBlock(const ScopedChannelBlock&) = delete;
  ScopedChannelBlock& operator=(const ScopedChannelBlock&) = delete;
};

// Caps cpu_isa() for one scope (set_cpu_isa_cap_for_testing), so that one
// machine runs each instruction set's copy of a kernel up to its own.
class ScopedCpuIsaCap {
 public:
  explicit ScopedCpuIsaCap(CpuIsa cap) { set_cpu_isa_cap_for_testing(cap); }
  ~ScopedCpuIsaCap() { set_cpu_isa_cap_for_testing(std::nullopt); }
  ScopedCpuIsaCap(const ScopedCpuIsaCap&) = delete;
  ScopedCpuIsaCap& operator=(const ScopedCpuIsaCap&) = delete;
};

// Sets an environment variable (or unsets it, for null) for one scope and
// puts the old value back.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnvironment() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// XTRAIN_CONV_IMPL for one scope: the test nets' convolutions are small
// enough for the GEMM engine unless told otherwise.
class ScopedConvImpl : public ScopedEnvironment {
 public:
  explicit ScopedConvImpl(const char* value) : ScopedEnvironment("XTRAIN_CONV_IMPL", value) {}
};

// The net of prototxt `text` in `phase`, built with `options` and without
// its setup log: each test states only the options it compares.
inline std::unique_ptr<Net> make_quiet_net(const std::string& text, Phase phase,
                                           NetOptions options) {
  NetParameter param;
  read_proto_from_text_string(text, &param);
  param.mutable_state()->set_phase(phase);
  options.verbose = false;
  return std::make_unique<Net>(param, options);
}

inline bool same_bits(const float* a, const float* b, std::size_t count) {
  return std::memcmp(a, b, count * sizeof(float)) == 0;
}

// Every param's data and diff and every blob's data (and with `diffs` its
// diff), read through the plain accessors, are the same bits in both nets;
// only the blobs in `blob_names` when it is given (with the memory plan, the
// other blobs' storage may hold another blob's values by then).
inline void expect_nets_match(Net& expected, Net& actual, bool diffs, const std::string& when,
                              const std::vector<std::string>* blob_names = nullptr) {
  for (std::size_t i = 0; i < expected.params().size(); ++i) {
    const Blob& a = *expected.params()[i];
    const Blob& b = *actual.params()[i];
    EXPECT_TRUE(same_bits(a.cpu_data(), b.cpu_data(), a.count()))
        << when << ": param " << expected.param_display_names()[i] << " data";
    EXPECT_TRUE(same_bits(a.cpu_diff(), b.cpu_diff(), a.count()))
        << when << ": param " << expected.param_display_names()[i] << " diff";
  }
  for (const std::string& name : blob_names ? *blob_names : expected.blob_names()) {
    const Blob& a = *expected.blob_by_name(name);
    const Blob& b = *actual.blob_by_name(name);
    EXPECT_TRUE(same_bits(a.cpu_data(), b.cpu_data(), a.count()))
        << when << ": " << name << " data";
    if (diffs) {
      EXPECT_TRUE(same_bits(a.cpu_diff(), b.cpu_diff(), a.count()))
          << when << ": " << name << " diff";
    }
  }
}

}  // namespace xtrain::testing
