// Tests typed over devices: one test body, run once on the CPU and once on
// GPU 0, as Caffe's tests are typed over CPU and GPU.
//
//   XTRAIN_DEVICE_TEST(PowerLayerTest, Forward) { ... }        // like TEST
//   XTRAIN_DEVICE_TEST_F(PoolingTest, MaxForward) { ... }      // like TEST_F
//
// register `CPU/PowerLayerTest.Forward` and `GPU/PowerLayerTest.Forward`.
// A value-parameterized suite derives its fixture from DeviceTestWithParam<T>
// and replaces INSTANTIATE_TEST_SUITE_P(Prefix, Suite, ...) by
//
//   XTRAIN_INSTANTIATE_ON_DEVICES(Suite, ...)                  // same arguments
//
// which gives `CPU/Suite.Name/Param` and `GPU/Suite.Name/Param`. So
// --gtest_filter='GPU/*' (or `ctest -R '^GPU/'`) selects every GPU instance.
//
// The body sees its device as testing::current_device(), which the shared
// helpers honour: create_layer()/make_layer() put the layer on it, and a test
// building a Net or a Solver passes testing::net_options()/device_solver_options()
// or sets NetOptions::device / SolverOptions::device itself. A fixture's
// SetUp() runs with the device already current.
//
// Without a usable GPU (a CPU-only build, no driver, no device) the GPU
// instances skip, before the fixture's SetUp, with the reason
// cuda_device_count() gives; ctest reports them as skipped, not passed.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "xtrain/device.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"

namespace xtrain::testing {

namespace detail {
inline Device& current_device_slot() {
  static Device device = Device::cpu();
  return device;
}
}  // namespace detail

// The device the running test body computes on (the CPU outside device tests).
inline const Device& current_device() { return detail::current_device_slot(); }

// Makes `device` current for its lifetime.
class ScopedDevice {
 public:
  explicit ScopedDevice(const Device& device) : previous_(current_device()) {
    detail::current_device_slot() = device;
  }
  ~ScopedDevice() { detail::current_device_slot() = previous_; }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  Device previous_;
};

// Empty if GPU 0 can run kernels; otherwise why not ("built without CUDA",
// the driver's message). Asked once per process.
inline const std::string& gpu_unavailable_reason() {
  static const std::string reason = [] {
    std::string why;
    if (cuda_device_count(&why) > 0) return std::string();
    return why.empty() ? std::string("no CUDA device") : why;
  }();
  return reason;
}

// In SetUpTestSuite(): whether the suite is a GPU instance whose tests will
// all skip, so that costly suite set-up can be skipped too.
inline bool suite_skips_for_lack_of_gpu() {
  const ::testing::TestSuite* suite = ::testing::UnitTest::GetInstance()->current_test_suite();
  return suite && std::string(suite->name()).rfind("GPU/", 0) == 0 &&
         !gpu_unavailable_reason().empty();
}

// "CPU" or "GPU", the prefix of the test names.
inline std::string device_tag(const Device& device) { return device.is_gpu() ? "GPU" : "CPU"; }

// A layer from the registry, on the current device (set before setup, as a
// Net does).
inline std::unique_ptr<Layer> create_layer(const LayerParameter& param) {
  std::unique_ptr<Layer> layer = LayerRegistry::global().create(param);
  layer->set_device(current_device());
  return layer;
}

// Quiet NetOptions on the current device.
inline NetOptions net_options(NetOptions options = {}) {
  options.verbose = false;
  options.device = current_device();
  return options;
}

namespace detail {

// The test class XTRAIN_DEVICE_TEST_F defines derives from this wrapper of
// the fixture: it makes the device current (or skips) before the fixture's
// SetUp and restores the previous one after its TearDown.
template <typename Fixture>
class OnDevice : public Fixture {
 public:
  void set_test_device(const Device& device) { device_ = device; }

 protected:
  void SetUp() override {
    if (device_.is_gpu() && !gpu_unavailable_reason().empty()) {
      GTEST_SKIP() << "no GPU: " << gpu_unavailable_reason();
    }
    scope_ = std::make_unique<ScopedDevice>(device_);
    Fixture::SetUp();
  }
  void TearDown() override {
    if (!scope_) return;  // skipped before the fixture's SetUp
    Fixture::TearDown();
    scope_.reset();
  }

 private:
  Device device_;
  std::unique_ptr<ScopedDevice> scope_;
};

// Registers `CPU/<suite>.<name>` and `GPU/<suite>.<name>`, each a new Test.
template <typename Fixture, typename Test>
bool register_device_tests(const char* suite, const char* name, const char* file, int line) {
  for (const Device& device : {Device::cpu(), Device::gpu(0)}) {
    const std::string tag = device_tag(device);
    ::testing::RegisterTest((tag + "/" + suite).c_str(), name, nullptr, nullptr, file, line,
                            [device]() -> Fixture* {
                              auto* test = new Test;
                              test->set_test_device(device);
                              return test;
                            });
  }
  return true;
}

}  // namespace detail

// A value-parameterized fixture typed over devices: the instantiation's
// prefix (XTRAIN_INSTANTIATE_ON_DEVICES gives CPU and GPU) picks the device.
template <typename T>
class DeviceTestWithParam : public ::testing::TestWithParam<T> {
 protected:
  void SetUp() override {
    const std::string suite =
        ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
    const bool on_gpu = suite.rfind("GPU/", 0) == 0;
    ASSERT_TRUE(on_gpu || suite.rfind("CPU/", 0) == 0)
        << suite << ": instantiate with XTRAIN_INSTANTIATE_ON_DEVICES";
    if (on_gpu && !gpu_unavailable_reason().empty()) {
      GTEST_SKIP() << "no GPU: " << gpu_unavailable_reason();
    }
    scope_ = std::make_unique<ScopedDevice>(on_gpu ? Device::gpu(0) : Device::cpu());
  }
  void TearDown() override { scope_.reset(); }

 private:
  std::unique_ptr<ScopedDevice> scope_;
};

}  // namespace xtrain::testing

#define XTRAIN_DEVICE_TEST_CLASS_(Suite, Name) Suite##_##Name##_DeviceTest

// Like TEST_F(Fixture, Name), once per device.
#define XTRAIN_DEVICE_TEST_F(Fixture, Name)                                                       \
  class XTRAIN_DEVICE_TEST_CLASS_(Fixture, Name)                                                  \
      : public ::xtrain::testing::detail::OnDevice<Fixture> {                                     \
   public:                                                                                        \
    void TestBody() override;                                                                     \
  };                                                                                              \
  [[maybe_unused]] static const bool Fixture##_##Name##_device_tests_registered =                 \
      ::xtrain::testing::detail::register_device_tests<Fixture,                                   \
                                                       XTRAIN_DEVICE_TEST_CLASS_(Fixture, Name)>( \
          #Fixture, #Name, __FILE__, __LINE__);                                                   \
  void XTRAIN_DEVICE_TEST_CLASS_(Fixture, Name)::TestBody()

// Like TEST(Suite, Name), once per device.
#define XTRAIN_DEVICE_TEST(Suite, Name)                                                         \
  class XTRAIN_DEVICE_TEST_CLASS_(Suite, Name)                                                  \
      : public ::xtrain::testing::detail::OnDevice<::testing::Test> {                           \
   public:                                                                                      \
    void TestBody() override;                                                                   \
  };                                                                                            \
  [[maybe_unused]] static const bool Suite##_##Name##_device_tests_registered =                 \
      ::xtrain::testing::detail::register_device_tests<::testing::Test,                         \
                                                       XTRAIN_DEVICE_TEST_CLASS_(Suite, Name)>( \
          #Suite, #Name, __FILE__, __LINE__);                                                   \
  void XTRAIN_DEVICE_TEST_CLASS_(Suite, Name)::TestBody()

// Like INSTANTIATE_TEST_SUITE_P(Prefix, Suite, ...) for a DeviceTestWithParam
// fixture, once per device (the prefixes CPU and GPU).
#define XTRAIN_INSTANTIATE_ON_DEVICES(Suite, ...)    \
  INSTANTIATE_TEST_SUITE_P(CPU, Suite, __VA_ARGS__); \
  INSTANTIATE_TEST_SUITE_P(GPU, Suite, __VA_ARGS__)
