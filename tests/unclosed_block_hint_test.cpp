// Where to look for a missing '}' in a prototxt.
#include "core/unclosed_block_hint.hpp"

#include <gtest/gtest.h>

#include "layer_test_support.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

// Line numbers:                 1
const std::string kNet = "name: 'n'\n"
                         "layer {\n"                             // 2
                         "  name: 'conv1 {'  # a brace in a string\n"  // 3
                         "  convolution_param {\n"               // 4
                         "    num_output: 2  # } in a comment\n"  // 5
                         "  \n"                                  // 6, its '}' missing
                         "}\n"                                   // 7
                         "layer {\n"                             // 8
                         "  name: 'relu'\n"                      // 9
                         "}\n";                                  // 10

TEST(UnclosedBlockHint, NamesTheOutermostOpenBlockAndTheLines) {
  EXPECT_EQ(unclosed_block_hint(kNet, 8),
            "the block 'layer {' opened at line 2 is still open here: is a '}' missing between "
            "line 2 and line 8?");
}

TEST(UnclosedBlockHint, NothingOpenNoHint) {
  EXPECT_EQ(unclosed_block_hint(kNet, 2), "");
  EXPECT_EQ(unclosed_block_hint("layer { name: 'a' }\nlayer {\n", 2), "");
}

TEST(UnclosedBlockHint, ParseErrorsOfAMissingBraceCarryIt) {
  NetParameter net;
  const std::string message = testing::error_of(
      [&] { read_proto_from_text_string(kNet, &net, "net.prototxt"); });
  EXPECT_NE(message.find("net.prototxt:8:"), std::string::npos) << message;
  EXPECT_NE(message.find("is a '}' missing between line 2 and line 8?"), std::string::npos)
      << message;
}

TEST(UnclosedBlockHint, OtherParseErrorsDoNot) {
  NetParameter net;
  const std::string message = testing::error_of([&] {
    read_proto_from_text_string("layer {\n  nmae: 'x'\n}\n", &net, "net.prototxt");
  });
  EXPECT_NE(message.find("net.prototxt:2:"), std::string::npos) << message;
  EXPECT_EQ(message.find("missing"), std::string::npos) << message;
}

}  // namespace
}  // namespace xtrain
