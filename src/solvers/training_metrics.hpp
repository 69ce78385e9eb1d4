// The metrics file of a training: one JSON object per line, appended as the
// solver displays and tests, so a run's curves can be charted while it runs
// and after it ends (training_report.hpp), and continue across resumes.
//
//   {"kind":"run","iteration":0,"seconds":0,"net_name":"LeNet","device":"CPU",
//    "start_time":"2026-11-22 12:00:00","solver":"base_lr: 0.01\n..."}
//   {"kind":"train","iteration":100,"seconds":2.5,"loss":0.31,"lr":0.0099,
//    "outputs":{"loss":0.29},"images_per_second":2600}
//   {"kind":"test","iteration":500,"seconds":12.1,"net":0,
//    "outputs":{"accuracy":0.97,"loss":0.09}}
//
// "seconds" counts training time over all sessions of the run; "run" starts
// each session (a fresh start or a resume).
#pragma once

#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xtrain {

struct MetricsRecord {
  enum class Kind { kRun, kTrain, kTest };
  Kind kind = Kind::kTrain;
  int iteration = 0;
  double seconds = 0;
  // kTrain: the smoothed loss, the learning rate and the throughput (each
  // may be unknown, e.g. in a log that lacks the line).
  std::optional<double> loss;
  std::optional<double> lr;
  std::optional<double> images_per_second;
  // kTest: which test net.
  int net = 0;
  // kTrain and kTest: the net's outputs, in the order the log prints them.
  std::vector<std::pair<std::string, double>> outputs;
  // kRun: the session's configuration.
  std::string net_name;
  std::string device;
  std::string start_time;
  std::string solver_text;
};

// One line of JSON (no trailing newline).
std::string metrics_record_to_json(const MetricsRecord& record);

// Parses one line written by metrics_record_to_json (any JSON object with
// these fields; unknown fields are ignored). Throws xtrain::Error saying what
// is wrong and at which column.
MetricsRecord metrics_record_from_json(const std::string& line);

// Every record of a metrics file. Throws xtrain::Error naming "path:line" for
// a line that is not a record; with `skip_damaged_last_line`, a last line cut
// off by a killed process is dropped instead.
std::vector<MetricsRecord> read_metrics_file(const std::string& path,
                                             bool skip_damaged_last_line = false);

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
