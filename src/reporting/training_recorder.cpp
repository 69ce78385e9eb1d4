#include "reporting/training_recorder.hpp"

#include <ctime>
#include <map>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/snapshot_files.hpp"
#include "xtrain/training_report.hpp"

namespace xtrain {
namespace {

// A display rewrites the report at most this often; tests and the end
// always do.
constexpr double kReportSecondsBetweenDisplays = 30;

std::string local_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

// A train or test line of the metrics file with what both carry: the
// iteration, the training seconds and the net's outputs.
template <typename Event>
MetricsRecord metrics_line(MetricsRecord::Kind kind, const Event& event) {
  MetricsRecord record;
  record.kind = kind;
  record.iteration = event.iteration;
  record.seconds = event.seconds;
  record.outputs = named_output_values(event.outputs);
  return record;
}

// The .caffemodel and .solverstate of each snapshot on disk, oldest first.
std::vector<std::string> snapshot_files(const std::string& prefix) {
  std::vector<std::string> paths;
  std::vector<SnapshotOnDisk> snapshots;
  try {
    snapshots = list_snapshots(prefix);
  } catch (const Error&) {
    return paths;  // no snapshot directory yet
  }
  for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
    std::string weights = it->solverstate_path;
    const std::size_t at = weights.rfind(".solverstate");
    if (at != std::string::npos) weights.replace(at, 12, ".caffemodel");
    paths.push_back(weights);
    paths.push_back(it->solverstate_path);
  }
  return paths;
}

}  // namespace

TrainingRecorder::TrainingRecorder(std::string metrics_path, std::string report_path)
    : metrics_path_(std::move(metrics_path)), report_path_(std::move(report_path)) {}

void TrainingRecorder::on_start(const TrainingStart& event) {
  if (metrics_path_.empty() && report_path_.empty()) return;
  metrics_ = std::make_unique<TrainingMetrics>(metrics_path_, event.resumed);
  if (!metrics_path_.empty()) {
    XLOG(INFO) << (event.resumed ? "Appending" : "Writing") << " training metrics to "
               << metrics_path_;
  }
  snapshot_prefix_ = event.snapshot_prefix;
  MetricsRecord run;
  run.kind = MetricsRecord::Kind::kRun;
  run.iteration = event.iteration;
  run.seconds = event.seconds;
  run.net_name = event.net_name;
  run.device = event.device;
  run.start_time = local_time_now();
  run.solver_text = event.solver_text;
  run.precision = event.precision;
  metrics_->add(run);
  last_report_time_ = std::chrono::steady_clock::now();
}

void TrainingRecorder::on_display(const TrainingDisplay& event) {
  if (!metrics_) return;
  MetricsRecord record = metrics_line(MetricsRecord::Kind::kTrain, event);
  record.loss = event.smoothed_loss;
  if (!event.final_pass) {
    record.lr = event.learning_rate;
    if (event.images_per_second >= 0) record.images_per_second = event.images_per_second;
    if (event.loss_scale != 1 || event.skipped_updates > 0) {
      record.loss_scale = event.loss_scale;
      record.skipped_updates = static_cast<double>(event.skipped_updates);
    }
  }
  metrics_->add(record);
  const double since_report =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_report_time_).count();
  if (!event.final_pass && since_report >= kReportSecondsBetweenDisplays) write_report();
}

void TrainingRecorder::on_test(const TestDone& event) {
  if (!metrics_) return;
  MetricsRecord record = metrics_line(MetricsRecord::Kind::kTest, event);
  record.net = event.test_net;
  metrics_->add(record);
  write_report();
}

void TrainingRecorder::on_end(const TrainingEnd& /*event*/) { write_report(); }

void TrainingRecorder::write_report() {
  if (!metrics_ || report_path_.empty()) return;
  last_report_time_ = std::chrono::steady_clock::now();
  ReportContents contents;
  contents.records = metrics_->records();
  contents.snapshots = snapshot_files(snapshot_prefix_);
  contents.source = metrics_path_.empty() ? "this training" : metrics_path_;
  try {
    write_training_report(report_path_, contents);
  } catch (const Error& error) {
    // The report is a view of the training, never a reason to stop it.
    XLOG(WARNING) << "Could not write the training report: " << error.what();
  }
}

std::shared_ptr<TrainingObserver> make_training_recorder(const std::string& metrics_path,
                                                         const std::string& report_path) {
  return std::make_shared<TrainingRecorder>(metrics_path, report_path);
}

}  // namespace xtrain
