// xtrain: train, test and time nets described by Caffe prototxt files.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "command.hpp"
#include "command_help.hpp"
#include "flag_help.hpp"
#include "flags.hpp"
#include "xtrain/cpu_threads.hpp"
#include "xtrain/error.hpp"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)();
  // Instead of run, for commands that take arguments after the flags.
  int (*run_with_arguments)(const std::vector<std::string>&) = nullptr;
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
    {"export",
     "write a trained net as an ONNX model (--model, --weights, --output, --opset) or its "
     "weights as Darknet's (--darknet_cfg, --weights, --darknet_weights)",
     xtrain::cli::export_command},
    {"import",
     "read an ONNX model (--onnx) or a Darknet cfg and weights (--darknet_cfg, "
     "--darknet_weights) as a net and weights (--output_model, --output_weights)",
     xtrain::cli::import_command},
    {"classify", "label images with a trained net (--model, --weights, --labels, ...) IMAGE...",
     nullptr, xtrain::cli::classify_command},
    {"detect",
     "find objects in images with a trained detector (--model, --weights, --label_map, "
     "--draw, ...) IMAGE...",
     nullptr, xtrain::cli::detect_command},
    {"draw", "draw a net as a picture: NET.prototxt OUT.svg (--phase, --rankdir, --format)",
     nullptr, xtrain::cli::draw_command},
    {"extract_features",
     "write blobs of a trained net to LMDBs (--model, --weights, --blobs, --outputs)", nullptr,
     xtrain::cli::extract_features_command},
    {"plot", "chart a training: LOG_OR_METRICS [-o report.html]", nullptr,
     xtrain::cli::plot_command},
};

// What `xtrain <command> --help` lists: the arguments after the flags and the
// flags the command reads. tests/tools/help_test.cpp checks that every flag
// DEFINEd in tools/xtrain/ is listed for some command.
const std::vector<std::string> kNetStateFlags = {"level", "stage"};
const std::vector<std::string> kComputeFlags = {"gpu",
                                                "threads",
                                                "share_activation_memory",
                                                "channel_blocked_activations",
                                                "share_kept_copies",
                                                "fuse_layers",
                                                "cpu_algorithm_search",
                                                "cudnn_workspace_mb",
                                                "cudnn_algorithm_search",
                                                "gpu_math",
                                                "precision"};

std::vector<std::string> joined(std::vector<std::string> first,
                                const std::vector<std::vector<std::string>>& rest) {
  for (const auto& more : rest) first.insert(first.end(), more.begin(), more.end());
  return first;
}

const xtrain::cli::CommandHelp kCommandHelp[] = {
    {"train", "",
     joined({"solver", "snapshot", "weights", "max_iter", "iter_size", "max_seconds",
             "snapshot_keep", "snapshot_minutes", "metrics", "tensorboard", "sigint_effect",
             "sighup_effect", "sigterm_effect", "sigusr1_effect", "collective_timeout",
             "gradient_bucket_mb", "rendezvous", "rank", "world_size"},
            {kNetStateFlags, kComputeFlags})},
    {"test", "",
     joined({"model", "weights", "allow_missing_weights", "iterations", "phase"},
            {kNetStateFlags, kComputeFlags})},
    {"time", "",
     joined({"model", "iterations", "phase", "training_step"}, {kNetStateFlags, kComputeFlags})},
    {"device_query", "", {"gpu"}},
    {"upgrade", "", {"model", "solver", "weights", "output"}},
    {"export",
     "",
     {"model", "weights", "output", "opset", "dynamic_batch", "darknet_cfg", "darknet_weights"}},
    {"import",
     "",
     {"onnx", "darknet_cfg", "darknet_weights", "darknet_partial", "output_model", "output_weights",
      "output_train_net", "train_source", "test_source", "label_map_file", "train_batch_size",
      "test_batch_size"}},
    {"classify",
     "IMAGE...",
     {"model", "weights", "allow_missing_weights", "labels", "top_k", "mean", "mean_values",
      "scale", "gpu", "threads", "cpu_algorithm_search", "cudnn_workspace_mb",
      "cudnn_algorithm_search", "gpu_math"}},
    {"detect", "IMAGE...",
     joined({"model", "weights", "allow_missing_weights", "label_map", "confidence", "letterbox",
             "pad_value", "draw", "mean", "mean_values", "scale"},
            {{"gpu", "threads", "cpu_algorithm_search", "cudnn_workspace_mb",
              "cudnn_algorithm_search", "gpu_math"}})},
    {"draw", "NET.prototxt OUT.svg",
     joined({"rankdir", "format", "phase", "model", "output"}, {kNetStateFlags})},
    {"extract_features", "[WEIGHTS NET BLOBS DBS NUM_BATCHES lmdb [CPU|GPU] [ID]]",
     joined({"model", "weights", "allow_missing_weights", "blobs", "outputs", "backend",
             "iterations", "phase"},
            {kNetStateFlags, kComputeFlags})},
    {"plot", "LOG_OR_METRICS", {"o"}},
};

std::string usage() {
  std::string text =
      "usage: xtrain <command> <args>\n\n"
      "commands:\n";
  for (const Subcommand& sub : kSubcommands) {
    // Names pad to one column; a longer one (extract_features) gets one space.
    const std::size_t name_length = std::strlen(sub.name);
    text += "  " + std::string(sub.name) +
            std::string(std::max<std::size_t>(18, name_length + 1) - name_length, ' ') +
            sub.summary + "\n";
  }
  return text;
}

// How idle OpenMP threads wait follows the load (adapt_openmp_waiting_to_load,
// called by each computing command): a long spin while the other processes
// leave our CPUs idle, a short one while they keep them busy. That needs
// libgomp's spin count found in memory; where it is not (another OpenMP
// runtime), start again with the short spin throughout, as libgomp reads
// GOMP_SPINCOUNT once, when it is loaded, before main(). Measured on 2 cores
// (LeNet ms per iteration, quiet / with one busy process beside it):
// libgomp's default ~4.3 / ~20-24, passive (no spin) 5.7-7.1 / 12.0,
// GOMP_SPINCOUNT=1000 4.5-5.5 / 12.4-14.5 (docs/performance.md).
void start_again_with_a_short_spin_where_it_cannot_adapt(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (xtrain::openmp_waiting_adaptable()) return;
  ::setenv("GOMP_SPINCOUNT", "1000", 1);
  ::execv("/proc/self/exe", argv);
  // Could not re-execute (no /proc?): carry on with the defaults.
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const Subcommand& sub : kSubcommands) names.push_back(sub.name);
  return names;
}

// `xtrain --help`, `xtrain help`: the commands; `xtrain <command> --help`,
// `xtrain help <command>`: that command's usage and flags. On stdout, exit 0.
int answer_help(int argc, char** argv) {
  const bool help_word = argc >= 2 && std::strcmp(argv[1], "help") == 0;
  const int command_index = help_word ? 2 : 1;
  if (argc <= command_index) {
    std::printf("%s\nrun 'xtrain <command> --help' for a command's flags\n", usage().c_str());
    return 0;
  }
  const std::string name = argv[command_index];
  std::string joined_names;
  for (const std::string& known : command_names()) {
    joined_names += (joined_names.empty() ? "" : ", ") + known;
  }
  const Subcommand* sub = std::find_if(std::begin(kSubcommands), std::end(kSubcommands),
                                       [&](const Subcommand& s) { return name == s.name; });
  if (sub == std::end(kSubcommands)) {
    std::fprintf(stderr, "xtrain: error: no help for unknown command '%s' (commands: %s)\n",
                 name.c_str(), joined_names.c_str());
    return 1;
  }
  const xtrain::cli::CommandHelp* help =
      std::find_if(std::begin(kCommandHelp), std::end(kCommandHelp),
                   [&](const xtrain::cli::CommandHelp& h) { return name == h.name; });
  try {
    XTRAIN_CHECK(help != std::end(kCommandHelp), "'", name,
                 "' has no row in kCommandHelp (tools/xtrain/main.cpp)");
    std::fputs(xtrain::cli::command_help(*help, sub->summary, command_names()).c_str(), stdout);
  } catch (const xtrain::Error& error) {
    std::fprintf(stderr, "xtrain help: error: %s\n", error.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  start_again_with_a_short_spin_where_it_cannot_adapt(argv);
  gflags::SetUsageMessage(usage());
  gflags::SetVersionString("0.1.0");
  // gflags' own --help would list every flag of every linked file.
  gflags::ParseCommandLineNonHelpFlags(&argc, &argv, true);
  if (xtrain::tools::help_requested() || (argc >= 2 && std::strcmp(argv[1], "help") == 0)) {
    return answer_help(argc, argv);
  }
  if (xtrain::tools::version_requested()) {
    std::printf("xtrain %s\n", gflags::VersionString());
    return 0;
  }
  if (argc < 2) {
    std::fprintf(stderr, "%s\n(run 'xtrain <command> --help' for a command's flags)\n",
                 usage().c_str());
    return 1;
  }
  for (const Subcommand& sub : kSubcommands) {
    if (std::strcmp(argv[1], sub.name) != 0) continue;
    const std::vector<std::string> arguments(argv + 2, argv + argc);
    if (sub.run_with_arguments == nullptr && !arguments.empty()) {
      std::fprintf(stderr, "xtrain %s: error: unexpected argument '%s' (it takes flags only)\n",
                   sub.name, arguments.front().c_str());
      return 1;
    }
    try {
      return sub.run_with_arguments ? sub.run_with_arguments(arguments) : sub.run();
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
