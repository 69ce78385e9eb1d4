// xtrain: train, test and time nets described by Caffe prototxt files.
#include <cstdio>
#include <cstring>
#include <string>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)();
};

const Subcommand kSubcommands[] = {
    {"train", "train or fine-tune a model (--solver, --snapshot | --weights, --gpu)",
     xtrain::cli::train_command},
    {"test", "score a model (--model, --weights, --iterations, --gpu)", xtrain::cli::test_command},
    {"time", "benchmark a model's layers (--model, --iterations, --phase, --gpu)",
     xtrain::cli::time_command},
    {"device_query", "show the GPU's properties (--gpu)", xtrain::cli::device_query_command},
    {"upgrade", "rewrite an old net/solver/weights file (--model | --solver | --weights, --output)",
     xtrain::cli::upgrade_command},
};

std::string usage() {
  std::string text =
      "command line brew\n"
      "usage: xtrain <command> <args>\n\n"
      "commands:\n";
  for (const Subcommand& sub : kSubcommands) {
    text += "  " + std::string(sub.name) + std::string(14 - std::strlen(sub.name), ' ') +
            sub.summary + "\n";
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(usage());
  gflags::SetVersionString("0.1.0");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc != 2) {
    std::fprintf(stderr, "%s\n(run 'xtrain --help' for the flags)\n", usage().c_str());
    return 1;
  }
  for (const Subcommand& sub : kSubcommands) {
    if (std::strcmp(argv[1], sub.name) != 0) continue;
    try {
      return sub.run();
    } catch (const xtrain::Error& error) {
      std::fprintf(stderr, "xtrain %s: error: %s\n", sub.name, error.what());
      return 1;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "xtrain %s: error: %s\n", sub.name, error.what());
      return 1;
    }
  }
  std::fprintf(stderr, "xtrain: unknown command '%s'\n\n%s", argv[1], usage().c_str());
  return 1;
}
