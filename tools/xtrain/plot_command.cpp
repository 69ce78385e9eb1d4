// xtrain plot LOG_OR_METRICS [-o report.html]: the training report (the page
// `xtrain train` writes beside its snapshots) from a metrics file, an xtrain
// log or a BVLC Caffe log.
#include <fstream>
#include <iostream>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"
#include "xtrain/snapshot_files.hpp"
#include "xtrain/training_report.hpp"

DEFINE_string(o, "",
              "plot: the HTML file to write (default: the input's name with _plot.html "
              "instead of its extension or _metrics.jsonl)");

namespace xtrain::cli {
namespace {

const std::string kMetricsSuffix = "_metrics.jsonl";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A metrics file holds JSON objects; a log starts with anything else.
bool looks_like_metrics(const std::string& path) {
  std::ifstream file = open_input_file(path, "");
  for (std::string line; std::getline(file, line);) {
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos) return line[first] == '{';
  }
  throw Error(path + " is empty: give a training log or a metrics .jsonl file");
}

// <name>_plot.html: never the _report.html that the training itself keeps
// beside its snapshots (plotting a run's metrics must not replace it).
std::string default_output(const std::string& input) {
  if (ends_with(input, kMetricsSuffix)) {
    return input.substr(0, input.size() - kMetricsSuffix.size()) + "_plot.html";
  }
  const std::size_t slash = input.rfind('/');
  const std::size_t dot = input.rfind('.');
  const bool has_extension =
      dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_extension ? input.substr(0, dot) : input) + "_plot.html";
}

// The snapshots beside <prefix>_metrics.jsonl, as the solver's report lists them.
std::vector<std::string> snapshots_beside(const std::string& metrics_path) {
  std::vector<std::string> paths;
  if (!ends_with(metrics_path, kMetricsSuffix)) return paths;
  const std::string prefix = metrics_path.substr(0, metrics_path.size() - kMetricsSuffix.size());
  try {
    const std::vector<SnapshotOnDisk> snapshots = list_snapshots(prefix);
    for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
      std::string weights = it->solverstate_path;
      weights.replace(weights.rfind(".solverstate"), 12, ".caffemodel");
      paths.push_back(weights);
      paths.push_back(it->solverstate_path);
    }
  } catch (const Error&) {
  }
  return paths;
}

}  // namespace

int plot_command(const std::vector<std::string>& arguments) {
  XTRAIN_CHECK(arguments.size() == 1,
               "give one file, a training log or a metrics .jsonl: xtrain plot "
               "LOG_OR_METRICS [-o report.html] (got ",
               arguments.size(), " arguments)");
  const std::string& input = arguments.front();
  ReportContents contents;
  contents.source = input;
  if (looks_like_metrics(input)) {
    contents.records = read_metrics_file(input);
    contents.snapshots = snapshots_beside(input);
  } else {
    TrainingLog log = read_training_log_file(input);
    contents.records = std::move(log.records);
    contents.snapshots = std::move(log.snapshots);
  }
  const std::string output = !FLAGS_o.empty() ? FLAGS_o : default_output(input);
  write_training_report(output, contents);
  std::cout << "Wrote " << output << " (" << contents.records.size() << " records from " << input
            << ")\n";
  return 0;
}

}  // namespace xtrain::cli
