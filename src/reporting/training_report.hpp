// The curves of the HTML report, as the page draws them (the page itself and
// what it shows: xtrain/training_report.hpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "xtrain/training_report.hpp"  // MetricsRecord, ReportContents

namespace xtrain {

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

}  // namespace xtrain
