// The device-typed test harness itself: every instance's body and fixture see
// the instance's device, the shared helpers put layers, nets and solvers on
// it, and GPU instances skip exactly when no GPU is usable.
#include "device_test_support.hpp"

#include <gtest/gtest.h>

#include <string>

#include "layer_test_support.hpp"
#include "loss_layer_test_helpers.hpp"
#include "solver_test_net.hpp"

namespace xtrain {
namespace {

bool running_a_gpu_instance() {
  const std::string suite =
      ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
  return suite.rfind("GPU/", 0) == 0;
}

TEST(DeviceTestSupport, HelpersFollowTheCurrentDevice) {
  ASSERT_FALSE(testing::current_device().is_gpu());
  {
    // Nothing computes here, so this runs without a GPU too.
    testing::ScopedDevice gpu(Device::gpu(0));
    EXPECT_TRUE(testing::current_device().is_gpu());
    EXPECT_TRUE(testing::make_layer("name: 'r' type: 'ReLU'")->device().is_gpu());
    EXPECT_TRUE(testing::create_layer(testing::layer_param_from("name: 'r' type: 'ReLU'"))
                    ->device()
                    .is_gpu());
    EXPECT_TRUE(testing::make_loss_layer("EuclideanLoss")->device().is_gpu());
    EXPECT_TRUE(testing::net_options().device.is_gpu());
    EXPECT_FALSE(testing::net_options().verbose);
    ASSERT_TRUE(testing::quiet_solver_options().device.has_value());
    EXPECT_TRUE(testing::quiet_solver_options().device->is_gpu());
  }
  EXPECT_FALSE(testing::current_device().is_gpu());
  EXPECT_FALSE(testing::make_layer("name: 'r' type: 'ReLU'")->device().is_gpu());
}

TEST(DeviceTestSupport, GpuInstancesSkipExactlyWhenNoGpuIsUsable) {
  std::string why;
  const int gpus = cuda_device_count(&why);
  EXPECT_EQ(testing::gpu_unavailable_reason().empty(), gpus > 0);
  if (gpus == 0) {
    EXPECT_EQ(testing::gpu_unavailable_reason(), why);
  }
}

XTRAIN_DEVICE_TEST(DeviceTestSupport, BodyRunsOnItsInstancesDevice) {
  EXPECT_EQ(testing::current_device().is_gpu(), running_a_gpu_instance());
  EXPECT_EQ(testing::current_device().id, 0);
}

class DeviceFixture : public ::testing::Test {
 protected:
  void SetUp() override { device_in_set_up_ = testing::current_device(); }
  void TearDown() override {
    EXPECT_EQ(testing::current_device().is_gpu(), device_in_set_up_.is_gpu());
  }
  Device device_in_set_up_;
};

XTRAIN_DEVICE_TEST_F(DeviceFixture, SetUpBodyAndTearDownSeeTheInstancesDevice) {
  EXPECT_EQ(device_in_set_up_.is_gpu(), running_a_gpu_instance());
  EXPECT_EQ(testing::current_device().is_gpu(), running_a_gpu_instance());
}

class DeviceParameterTest : public testing::DeviceTestWithParam<int> {};

TEST_P(DeviceParameterTest, BodyRunsOnItsInstancesDevice) {
  EXPECT_EQ(testing::current_device().is_gpu(), running_a_gpu_instance());
  EXPECT_GE(GetParam(), 1);
}

XTRAIN_INSTANTIATE_ON_DEVICES(DeviceParameterTest, ::testing::Values(1, 2));

}  // namespace
}  // namespace xtrain
