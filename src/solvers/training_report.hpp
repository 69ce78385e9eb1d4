// The HTML report of a training: one self-contained page (inline SVG, no
// script, no network) with the loss, test accuracy, learning-rate and
// throughput curves, the run's configuration and its snapshots. The solver
// rewrites it as it trains; `xtrain plot` builds the same page from a log or
// a metrics file.
//
// Every curve is an SVG <polyline class="series"> whose data-series,
// data-last-iteration and data-last-value attributes (and <title>) give its
// name and last point, so tools and tests can read the page without
// rendering it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "solvers/training_metrics.hpp"

namespace xtrain {

struct ReportContents {
  // Records in the order written; a session that resumed from an earlier
  // iteration replaces the points of the sessions before it from there on.
  std::vector<MetricsRecord> records;
  std::vector<std::string> snapshots;  // paths of .caffemodel/.solverstate files
  std::string source;                  // where the records came from (shown)
};

// One curve of a chart: its name and points (iteration, value).
struct ReportSeries {
  std::string name;
  std::vector<std::pair<int, double>> points;
};

// Whether a net output is charted as a loss (its name says so: "loss",
// "loss_cls", "RPN_Loss") rather than as a score such as accuracy.
bool is_loss_output(const std::string& name);

// The records with the points that a later session recomputed removed.
std::vector<MetricsRecord> latest_history(const std::vector<MetricsRecord>& records);

// The curves of each chart, as the page draws them.
std::vector<ReportSeries> loss_series(const std::vector<MetricsRecord>& records);
std::vector<ReportSeries> test_score_series(const std::vector<MetricsRecord>& records);
std::vector<ReportSeries> learning_rate_series(const std::vector<MetricsRecord>& records);
std::vector<ReportSeries> throughput_series(const std::vector<MetricsRecord>& records);

std::string build_training_report(const ReportContents& contents);

}  // namespace xtrain
