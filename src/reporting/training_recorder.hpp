// The observer that keeps a training's record: the metrics file (one JSON
// line per display and test, reporting/training_metrics.hpp) and the HTML
// report made of it (xtrain/training_report.hpp). Built by
// make_training_recorder().
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "reporting/training_metrics.hpp"
#include "xtrain/training_observer.hpp"

namespace xtrain {

class TrainingRecorder : public TrainingObserver {
 public:
  TrainingRecorder(std::string metrics_path, std::string report_path);

  void on_start(const TrainingStart& event) override;
  void on_display(const TrainingDisplay& event) override;
  void on_test(const TestDone& event) override;
  void on_end(const TrainingEnd& event) override;

 private:
  void write_report();

  std::string metrics_path_;
  std::string report_path_;
  std::string snapshot_prefix_;
  // Null until solve() starts: step() alone records nothing.
  std::unique_ptr<TrainingMetrics> metrics_;
  std::chrono::steady_clock::time_point last_report_time_;
};

}  // namespace xtrain
