#include <gtest/gtest.h>
#include "xtrain/blob.hpp"
TEST(Blob, Shape) { xtrain::Blob b({2, 3}); EXPECT_EQ(b.count(), 6u); }
