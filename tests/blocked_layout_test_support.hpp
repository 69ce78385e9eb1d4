// Helpers for the tests that compare a net computed one way with the same
// net computed another (channel-blocked activations or not, the memory plan
// or not, oneDNN or GEMM convolutions).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "xtrain/net.hpp"

namespace xtrain::testing {

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
