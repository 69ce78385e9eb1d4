// Where to look for a missing or a stray '}' in a prototxt: the hint that
// read_proto_from_text_string adds to protobuf's parse error.
#include "core/brace_mistake_hint.hpp"

#include <gtest/gtest.h>

#include "error_message.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

std::string net_error(const std::string& text) {
  NetParameter net;
  return testing::error_of([&] { read_proto_from_text_string(text, &net, "net.prototxt"); });
}

// Line numbers:                 1
const std::string kNet =
    "name: 'n'\n"
    "layer {\n"                                   // 2
    "  name: 'conv1 {'  # a brace in a string\n"  // 3
    "  convolution_param {\n"                     // 4
    "    num_output: 2  # } in a comment\n"       // 5
    "  \n"                                        // 6, its '}' missing
    "}\n"                                         // 7
    "layer {\n"                                   // 8
    "  name: 'relu'\n"                            // 9
    "}\n";                                        // 10

TEST(BraceMistakeHint, TheNextLayerInsideAnOpenOneNamesTheOpenLayer) {
  const std::string message = net_error(kNet);
  EXPECT_NE(message.find("net.prototxt:8:"), std::string::npos) << message;
  EXPECT_NE(message.find("; layer \"conv1 {\" opened at line 2 is not closed before line 8: is a "
                         "'}' missing between line 2 and line 8?"),
            std::string::npos)
      << message;
}

TEST(BraceMistakeHint, AFieldOfTheEnclosingBlockNamesTheInnerBlockAndItsLayer) {
  const std::string message = net_error(
      "layer {\n"                  // 1
      "  name: \"conv1\"\n"        // 2
      "  type: \"Convolution\"\n"  // 3
      "  convolution_param {\n"    // 4
      "    num_output: 2\n"        // 5, its '}' missing
      "  bottom: \"data\"\n"       // 6
      "}\n");
  EXPECT_NE(message.find("has no field named \"bottom\""), std::string::npos) << message;
  EXPECT_NE(message.find("; convolution_param (in layer \"conv1\") opened at line 4 is not closed "
                         "before line 6"),
            std::string::npos)
      << message;
}

TEST(BraceMistakeHint, AStrayBraceInsideALayerIsNamedWithTheLayerItClosed) {
  const std::string message = net_error(
      "layer {\n"                                     // 1
      "  name: \"ip\"\n"                              // 2
      "  inner_product_param { num_output: 10 } }\n"  // 3, one '}' too many
      "  bottom: \"data\"\n"                          // 4
      "}\n");
  EXPECT_NE(message.find("net.prototxt:4:"), std::string::npos) << message;
  EXPECT_NE(message.find("; 'bottom' belongs in layer \"ip\" (opened at line 1), but the '}' at "
                         "line 3 closed it: is that '}' one too many?"),
            std::string::npos)
      << message;
}

TEST(BraceMistakeHint, AStrayBraceAtTheTopLevelClosesNothing) {
  const std::string message = net_error(
      "layer {\n"         // 1
      "  name: \"ip\"\n"  // 2
      "}\n"               // 3
      "\n"                // 4
      "}\n"               // 5
      "layer { name: \"b\" }\n");
  EXPECT_NE(message.find("; the '}' at line 5 closes no block (the last one, layer \"ip\" opened "
                         "at line 1, was closed at line 3): remove it"),
            std::string::npos)
      << message;
}

TEST(BraceMistakeHint, ColumnsCountOnOneLineAndAfterTabs) {
  // A notebook's one-line prototxt: the stray '}' is after the first layer.
  const std::string message = net_error("layer { name: 'a' }\t} layer { name: 'b' }");
  EXPECT_NE(message.find("the '}' at line 1 closes no block (the last one, layer \"a\" opened at "
                         "line 1, was closed at line 1)"),
            std::string::npos)
      << message;
}

TEST(BraceMistakeHint, TheTextEndingInsideABlockSaysWhichIsOpen) {
  const std::string message = net_error(
      "layer {\n"
      "  name: \"a\"\n"
      "layer {\n"
      "  name: \"b\"\n"
      "}\n");
  // The second `layer {` is already wrong inside the first.
  EXPECT_NE(message.find("layer \"a\" opened at line 1 is not closed before line 3"),
            std::string::npos)
      << message;
  const std::string at_end = net_error("layer {\n  name: \"a\"\n  convolution_param {\n");
  EXPECT_NE(at_end.find("layer \"a\" opened at line 1 is not closed at the end of the text (2 "
                        "blocks are open): is a '}' missing?"),
            std::string::npos)
      << at_end;
}

TEST(BraceMistakeHint, SolverFilesToo) {
  SolverParameter solver;
  const std::string message = testing::error_of([&] {
    read_proto_from_text_string(
        "net_param {\n"         // 1
        "  name: \"inline\"\n"  // 2
        "  layer { name: \"data\" }\n"
        "base_lr: 0.01\n",  // 4
        &solver, "solver.prototxt");
  });
  EXPECT_NE(message.find("; net_param \"inline\" opened at line 1 is not closed before line 4"),
            std::string::npos)
      << message;
}

TEST(BraceMistakeHint, OtherParseErrorsDoNot) {
  // A misspelt field that no open block has, and a bad value.
  for (const std::string text :
       {"layer {\n  nmae: 'x'\n}\n", "layer {\n  convolution_param { num_output: x }\n}\n"}) {
    const std::string message = net_error(text);
    EXPECT_NE(message.find("net.prototxt:2:"), std::string::npos) << message;
    EXPECT_EQ(message.find("missing"), std::string::npos) << message;
    EXPECT_EQ(message.find("too many"), std::string::npos) << message;
  }
}

TEST(BraceMistakeHint, NothingOpenNoHint) {
  EXPECT_EQ(brace_mistake_hint("layer { name: 'a' }\nlayer {\n", *NetParameter::descriptor(),
                               {2, 0, "Expected identifier, got: layer"}),
            "");
}

}  // namespace
}  // namespace xtrain
