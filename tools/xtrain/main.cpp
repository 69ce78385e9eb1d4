// xtrain: train, test and time nets described by Caffe prototxt files.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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

// An idle OpenMP thread spins for a while (libgomp: ~300,000 polls) before
// it sleeps. On a machine of one's own that makes the next parallel region
// start at once; on a shared one the spinning threads take the cores from
// the work. libgomp reads its settings once, when it is loaded, before main():
// so if the user chose none, start again with a short spin, measured on 2
// cores (LeNet ms per iteration, quiet / with one busy process beside it):
// libgomp's default ~4.3 / ~20-24, passive (no spin) 5.7-7.1 / 12.0,
// GOMP_SPINCOUNT=1000 4.5-5.5 / 12.4-14.5, 3000 4.3 / 16.3.
void start_again_with_a_short_openmp_spin(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  ::setenv("GOMP_SPINCOUNT", "1000", 1);
  ::execv("/proc/self/exe", argv);
  // Could not re-execute (no /proc?): carry on with the defaults.
}

}  // namespace

int main(int argc, char** argv) {
  start_again_with_a_short_openmp_spin(argv);
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
