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
// cuda_device_count() gives; ctest reports them as skipped, not passed. With
// XTRAIN_REQUIRE_GPU=1 in the environment they fail instead, one line each
// ("XTRAIN_REQUIRE_GPU=1 but no GPU: <reason>"), so that a run meant for a GPU
// machine cannot pass having run nothing.
//
// A test that only makes sense on a GPU is written with XTRAIN_GPU_TEST or
// XTRAIN_GPU_TEST_F (like TEST and TEST_F): it registers `GPU/Suite.Name`
// alone and skips or fails the same way. Every GPU-only test carries the
// `GPU/` prefix, which is how `ctest -L gpu` finds them (tests/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

// Whether the environment says GPU tests must run: XTRAIN_REQUIRE_GPU set to
// anything but "" or "0".
inline bool gpu_required() {
  const char* value = std::getenv("XTRAIN_REQUIRE_GPU");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

// In SetUpTestSuite(): whether the suite is a GPU instance whose tests will
// all skip, so that costly suite set-up can be skipped too.
inline bool suite_skips_for_lack_of_gpu() {
  const ::testing::TestSuite* suite = ::testing::UnitTest::GetInstance()->current_test_suite();
  return suite && std::string(suite->name()).rfind("GPU/", 0) == 0 &&
         !gpu_unavailable_reason().empty();
}

// In a test body or SetUp() that needs GPU 0: returns from it, skipping the
// test without a usable GPU, or failing it when XTRAIN_REQUIRE_GPU is set.
#define XTRAIN_SKIP_WITHOUT_GPU()                                                          \
  do {                                                                                     \
    const std::string& xtrain_no_gpu_reason = ::xtrain::testing::gpu_unavailable_reason(); \
    if (!xtrain_no_gpu_reason.empty()) {                                                   \
      if (::xtrain::testing::gpu_required()) {                                             \
        GTEST_FAIL() << "XTRAIN_REQUIRE_GPU=1 but no GPU: " << xtrain_no_gpu_reason;       \
      }                                                                                    \
      GTEST_SKIP() << "no GPU: " << xtrain_no_gpu_reason;                                  \
    }                                                                                      \
  } while (false)

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
    if (device_.is_gpu()) XTRAIN_SKIP_WITHOUT_GPU();
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

// Registers `<tag>/<suite>.<name>` for each device (CPU and GPU 0 unless
// `gpu_only`), each a new Test.
template <typename Fixture, typename Test>
bool register_device_tests(const char* suite, const char* name, const char* file, int line,
                           bool gpu_only = false) {
  const std::vector<Device> devices = gpu_only ? std::vector<Device>{Device::gpu(0)}
                                               : std::vector<Device>{Device::cpu(), Device::gpu(0)};
  for (const Device& device : devices) {
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
    if (on_gpu) XTRAIN_SKIP_WITHOUT_GPU();
    scope_ = std::make_unique<ScopedDevice>(on_gpu ? Device::gpu(0) : Device::cpu());
  }
  void TearDown() override { scope_.reset(); }

 private:
  std::unique_ptr<ScopedDevice> scope_;
};

}  // namespace xtrain::testing

#define XTRAIN_DEVICE_TEST_CLASS_(Suite, Name) Suite##_##Name##_DeviceTest

// The test class of Suite.Name on `Base` (a fixture or ::testing::Test) and
// its registration once per device, or on the GPU alone when `gpu_only`;
// the test's body follows the macro.
#define XTRAIN_DEVICE_TEST_DEFINE_(Suite, Name, Base, gpu_only)                                 \
  class XTRAIN_DEVICE_TEST_CLASS_(Suite, Name)                                                  \
      : public ::xtrain::testing::detail::OnDevice<Base> {                                      \
   public:                                                                                      \
    void TestBody() override;                                                                   \
  };                                                                                            \
  [[maybe_unused]] static const bool Suite##_##Name##_device_tests_registered =                 \
      ::xtrain::testing::detail::register_device_tests<Base,                                    \
                                                       XTRAIN_DEVICE_TEST_CLASS_(Suite, Name)>( \
          #Suite, #Name, __FILE__, __LINE__, gpu_only);                                         \
  void XTRAIN_DEVICE_TEST_CLASS_(Suite, Name)::TestBody()

// Like TEST_F(Fixture, Name), once per device.
#define XTRAIN_DEVICE_TEST_F(Fixture, Name) \
  XTRAIN_DEVICE_TEST_DEFINE_(Fixture, Name, Fixture, /*gpu_only=*/false)

// Like TEST(Suite, Name), once per device.
#define XTRAIN_DEVICE_TEST(Suite, Name) \
  XTRAIN_DEVICE_TEST_DEFINE_(Suite, Name, ::testing::Test, /*gpu_only=*/false)

// Like TEST_F(Fixture, Name) for a test that needs a GPU: `GPU/Fixture.Name`
// alone, run with GPU 0 current.
#define XTRAIN_GPU_TEST_F(Fixture, Name) \
  XTRAIN_DEVICE_TEST_DEFINE_(Fixture, Name, Fixture, /*gpu_only=*/true)

// Like TEST(Suite, Name) for a test that needs a GPU: `GPU/Suite.Name` alone.
#define XTRAIN_GPU_TEST(Suite, Name) \
  XTRAIN_DEVICE_TEST_DEFINE_(Suite, Name, ::testing::Test, /*gpu_only=*/true)

// Like INSTANTIATE_TEST_SUITE_P(Prefix, Suite, ...) for a DeviceTestWithParam
// fixture, once per device (the prefixes CPU and GPU).
#define XTRAIN_INSTANTIATE_ON_DEVICES(Suite, ...)    \
  INSTANTIATE_TEST_SUITE_P(CPU, Suite, __VA_ARGS__); \
  INSTANTIATE_TEST_SUITE_P(GPU, Suite, __VA_ARGS__)
