// xtrain draw NET.prototxt OUT.svg: a picture of a net, like Caffe's
// python/draw_net.py, with the blob shapes on the edges. The DOT text comes
// from net_drawing.hpp; Graphviz's `dot` renders it (not needed for
// --format=dot).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "command.hpp"
#include "flags.hpp"
#include "net_drawing.hpp"
#include "piped_program.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/net_upgrade.hpp"
#include "xtrain/proto_io.hpp"

DEFINE_string(rankdir, "LR",
              "draw: direction of the graph, as Graphviz's rankdir: LR (left to right), TB "
              "(top to bottom), BT or RL");
DEFINE_string(format, "",
              "draw: svg, png, pdf or dot (the DOT text, which needs no Graphviz); default: "
              "from the output file's extension");

namespace xtrain::cli {
namespace {

const std::set<std::string> kFormats = {"svg", "png", "pdf", "dot"};

std::string output_format(const std::string& output_path) {
  if (!FLAGS_format.empty()) {
    XTRAIN_CHECK(kFormats.count(FLAGS_format), "--format=", FLAGS_format,
                 ": use svg, png, pdf or dot");
    return FLAGS_format;
  }
  std::string extension = std::filesystem::path(output_path).extension().string();
  if (!extension.empty()) extension.erase(0, 1);
  if (extension == "gv") return "dot";
  XTRAIN_CHECK(kFormats.count(extension), "cannot tell the format of '", output_path,
               "' from its extension; name it .svg, .png, .pdf or .dot, or give --format");
  return extension;
}

// Shapes of every blob of the net built in `param`'s phase, or none (with a
// warning saying why) when it cannot be built, e.g. its LMDB is missing.
std::map<std::string, std::vector<int>> blob_shapes_of(const NetParameter& param,
                                                       const std::string& net_path) {
  std::map<std::string, std::vector<int>> shapes;
  // Building is a means here: its layers' INFO lines would bury the result.
  const LogSeverity severity = min_log_severity();
  set_min_log_severity(std::max(severity, LogSeverity::kWarning));
  try {
    NetOptions options;
    options.verbose = false;
    options.fuse_layers = false;
    options.channel_blocked_activations = false;
    const Net net(param, options);
    for (std::size_t i = 0; i < net.blobs().size(); ++i) {
      shapes[net.blob_names()[i]] = net.blobs()[i]->shape();
    }
  } catch (const std::exception& error) {
    XLOG(WARNING) << "Drawing " << net_path << " without blob shapes: the net cannot be built ("
                  << error.what() << ")";
  }
  set_min_log_severity(severity);
  return shapes;
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  XTRAIN_CHECK(file.good(), "cannot write '", path, "' (does its directory exist?)");
  file << contents;
  file.close();
  XTRAIN_CHECK(!file.fail(), "writing '", path, "' failed (disk full?)");
}

std::string render_with_graphviz(const std::string& dot_text, const std::string& format) {
  const ProgramResult result = run_piped_program(
      {"dot", "-T" + format}, dot_text,
      "; install Graphviz (apt-get install graphviz), or write the DOT text with --format=dot");
  std::string errors = result.standard_error;
  while (!errors.empty() && (errors.back() == '\n' || errors.back() == ' ')) errors.pop_back();
  if (result.exit_code != 0) {
    for (char& c : errors) c = c == '\n' ? ' ' : c;
    const std::string how = result.exit_code < 0
                                ? "was killed by signal " + std::to_string(result.signal)
                                : "failed with exit code " + std::to_string(result.exit_code);
    throw Error("Graphviz's dot " + how + (errors.empty() ? "" : ": " + errors));
  }
  if (!errors.empty()) XLOG(WARNING) << "Graphviz's dot: " << errors;
  return result.standard_output;
}

}  // namespace

int draw_command(const std::vector<std::string>& arguments) {
  XTRAIN_CHECK(arguments.size() <= 2, "xtrain draw takes NET.prototxt and OUT.svg, got ",
               arguments.size(), " arguments");
  const std::string net_path = !arguments.empty() ? arguments[0] : FLAGS_model;
  const std::string output_path = arguments.size() > 1 ? arguments[1] : FLAGS_output;
  XTRAIN_CHECK(!net_path.empty() && !output_path.empty(),
               "usage: xtrain draw NET.prototxt OUT.svg [--phase=TRAIN|TEST] "
               "[--rankdir=LR|TB|BT|RL] [--format=svg|png|pdf|dot]");
  static const std::set<std::string> directions = {"LR", "TB", "BT", "RL"};
  XTRAIN_CHECK(directions.count(FLAGS_rankdir), "--rankdir=", FLAGS_rankdir,
               ": use LR, TB, BT or RL");
  const std::string format = output_format(output_path);
  const Phase phase = parse_phase(FLAGS_phase, TRAIN);

  NetParameter param = read_net_params_from_text_file(net_path);
  param.mutable_state()->set_phase(phase);
  param.mutable_state()->set_level(FLAGS_level);
  for (const std::string& stage : split_commas(FLAGS_stage)) {
    param.mutable_state()->add_stage(stage);
  }
  upgrade_net_inputs(&param);  // deprecated input: fields become an Input layer
  const std::map<std::string, std::vector<int>> shapes = blob_shapes_of(param, net_path);

  NetDrawingOptions options;
  options.rankdir = FLAGS_rankdir;
  options.caption = (param.name().empty() ? net_path : param.name()) + ", " + Phase_Name(phase) +
                    " phase" + (shapes.empty() ? " (blob shapes unknown)" : "");
  const std::string dot_text = net_to_dot(filter_net(param), shapes, options);
  write_file(output_path, format == "dot" ? dot_text : render_with_graphviz(dot_text, format));
  XLOG(INFO) << "Drew " << net_path << " (" << Phase_Name(phase) << ") to " << output_path;
  return 0;
}

}  // namespace xtrain::cli
