// A training's curves and its HTML report: the records of the metrics file
// that `xtrain train` appends to (<snapshot_prefix>_metrics.jsonl), the same
// records read back from a BVLC Caffe or xtrain log, and the report page
// made of them (what the solver rewrites as it trains and `xtrain plot`
// writes).
//
// The metrics file holds one JSON object per line:
//   {"kind":"run","iteration":0,"seconds":0,"net_name":"LeNet","device":"CPU",
//    "start_time":"2026-11-22 12:00:00","solver":"base_lr: 0.01\n..."}
//   {"kind":"train","iteration":100,"seconds":2.5,"loss":0.31,"lr":0.0099,
//    "outputs":{"loss":0.29},"images_per_second":2600}
//   {"kind":"test","iteration":500,"seconds":12.1,"net":0,
//    "outputs":{"accuracy":0.97,"loss":0.09}}
// "seconds" counts training time over all sessions of the run; "run" starts
// each session (a fresh start or a resume).
//
// The report is one self-contained page (inline SVG, no script, no network)
// with the loss, test score, learning-rate and throughput curves, the run's
// configuration and its snapshots. Every curve is an SVG <polyline
// class="series"> whose data-series, data-last-iteration and data-last-value
// attributes (and <title>) give its name and last point, so tools and tests
// can read the page without rendering it.
//
// These live in libxtrain_reporting (CMake target xtrain::reporting), apart
// from the training library: a program that trains without a report need
// not link the HTML and SVG code.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/export.hpp"
#include "xtrain/training_observer.hpp"

namespace xtrain {

struct XTRAIN_API MetricsRecord {
  enum class Kind { kRun, kTrain, kTest };
  Kind kind = Kind::kTrain;
  int iteration = 0;
  double seconds = 0;
  // kTrain: the smoothed loss, the learning rate and the throughput (each
  // may be unknown, e.g. in a log that lacks the line).
  std::optional<double> loss;
  std::optional<double> lr;
  std::optional<double> images_per_second;
  // kTrain with loss scaling: the scale and the updates skipped so far.
  std::optional<double> loss_scale;
  std::optional<double> skipped_updates;
  // kTest: which test net.
  int net = 0;
  // kTrain and kTest: the net's outputs, in the order the log prints them.
  std::vector<std::pair<std::string, double>> outputs;
  // kRun: the session's configuration.
  std::string net_name;
  std::string device;
  std::string start_time;
  std::string solver_text;
  std::string precision;  // empty in files written before it was recorded
};

// Every record of a metrics file. Throws xtrain::Error naming "path:line" for
// a line that is not a record; with `skip_damaged_last_line`, a last line cut
// off by a killed process is dropped instead.
XTRAIN_API std::vector<MetricsRecord> read_metrics_file(const std::string& path,
                                                        bool skip_damaged_last_line = false);

// The curves of a training log: the lines Caffe's tools/extra/parse_log.py
// reads ("Iteration 100 (...), loss = 0.3", "Train net output #0: ...",
// "Iteration 100, lr = ...", "Test net output #0: ..."), and when present
// the solver's parameters, the device, the snapshots written and xtrain's
// "Progress: ..., N images/s" line.
struct XTRAIN_API TrainingLog {
  // A kRun record (from the header lines), then the train and test records.
  std::vector<MetricsRecord> records;
  // The .caffemodel/.solverstate files the log says were written.
  std::vector<std::string> snapshots;
};

// Throws xtrain::Error naming "path:line" for a curve line whose value is
// not a number, and when the log has no training or test lines at all.
XTRAIN_API TrainingLog read_training_log_file(const std::string& path);

struct XTRAIN_API ReportContents {
  // Records in the order written; a session that resumed from an earlier
  // iteration replaces the points of the sessions before it from there on.
  std::vector<MetricsRecord> records;
  std::vector<std::string> snapshots;  // paths of .caffemodel/.solverstate files
  std::string source;                  // where the records came from (shown)
};

// The page, as HTML text.
XTRAIN_API std::string build_training_report(const ReportContents& contents);

// Writes the page to `path` atomically (a reader never sees half a page).
// Throws xtrain::Error naming the file if it cannot be written.
XTRAIN_API void write_training_report(const std::string& path, const ReportContents& contents);

// An observer for Solver::add_observer that keeps the training's record:
// from solve()'s start it appends a record to the metrics file at
// `metrics_path` at every display and test (a resumed solve() appends to the
// file, a fresh one starts it anew; empty: no file), and rewrites the report
// page at `report_path` at every test, at the end and at most every 30 s at a
// display (empty: no report). The snapshots the page lists are those on disk
// under the solver's snapshot_prefix. A report that cannot be written is a
// warning; a metrics file that cannot be opened throws xtrain::Error from
// solve().
XTRAIN_API std::shared_ptr<TrainingObserver> make_training_recorder(const std::string& metrics_path,
                                                                    const std::string& report_path);

}  // namespace xtrain
