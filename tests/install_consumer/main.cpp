// Builds a small net from text with the installed library and runs it.
#include <cstdio>

#include "xtrain/error.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

int main() {
  xtrain::NetParameter param;
  xtrain::read_proto_from_text_string(R"(
    name: "consumer"
    state { phase: TEST }
    layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 4 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "x" top: "ip"
            inner_product_param { num_output: 3 bias_filler { type: "constant" value: 0.5 } } }
    layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" })",
                                      &param);
  xtrain::NetOptions options;
  options.verbose = false;
  xtrain::Net net(param, options);
  net.forward();
  const xtrain::Blob& prob = *net.blob_by_name("prob");
  float sum = 0;
  for (std::size_t i = 0; i < prob.count(); ++i) sum += prob.cpu_data()[i];
  std::printf("consumer: %zu probabilities summing to %.3f\n", prob.count(), sum);
  // Bad input is an exception the application can catch.
  try {
    xtrain::NetParameter broken;
    xtrain::read_proto_from_text_string("layer { name: \"x\" type: \"NoSuchLayer\" }", &broken);
    xtrain::Net bad(broken, options);
    return 1;
  } catch (const xtrain::Error& error) {
    std::printf("consumer: caught: %s\n", error.what());
  }
  return sum > 1.99f && sum < 2.01f ? 0 : 1;
}
