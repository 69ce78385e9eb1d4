// The metrics file of a running training: one JSON object per line
// (the format and MetricsRecord are in xtrain/training_report.hpp), appended
// as the solver displays and tests, so a run's curves can be charted while
// it runs and after it ends, and continue across resumes.
#pragma once

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/training_report.hpp"  // MetricsRecord, read_metrics_file

namespace xtrain {

// A net's outputs by name, as the metrics file and the TensorBoard curves
// call them: a blob of several values gives name[0], name[1], ...
std::vector<std::pair<std::string, double>> named_output_values(
    const std::vector<NetOutputValue>& values);

// One line of JSON (no trailing newline).
std::string metrics_record_to_json(const MetricsRecord& record);

// Parses one line written by metrics_record_to_json (any JSON object with
// these fields; unknown fields are ignored). Throws xtrain::Error saying what
// is wrong and at which column.
MetricsRecord metrics_record_from_json(const std::string& line);

// The metrics file of a running training: records are appended one line at
// a time, each flushed, and kept in memory for the report.
class TrainingMetrics {
 public:
  // Opens `path` (empty: keep records in memory only). With `resume`, the
  // lines already in the file are kept and read back; otherwise the file is
  // started afresh. Throws xtrain::Error if it cannot be opened.
  TrainingMetrics(const std::string& path, bool resume);

  void add(const MetricsRecord& record);
  const std::vector<MetricsRecord>& records() const { return records_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream file_;
  std::vector<MetricsRecord> records_;
};

}  // namespace xtrain
