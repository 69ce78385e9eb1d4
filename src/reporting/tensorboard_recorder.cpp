// The observer behind xtrain/tensorboard.hpp: training events and the train
// net's parameters turned into TensorBoard scalars and histograms.
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reporting/tensorboard_writer.hpp"
#include "reporting/training_metrics.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/tensorboard.hpp"

namespace xtrain {
namespace {

using Scalars = std::vector<std::pair<std::string, double>>;

class TensorBoardRecorder : public TrainingObserver {
 public:
  TensorBoardRecorder(const std::string& directory, const Solver& solver)
      : writer_(directory), solver_(solver) {
    XLOG(INFO) << "TensorBoard events: " << writer_.path();
  }

  void on_start(const TrainingStart& event) override {
    if (event.resumed) write([&] { writer_.start_session(event.iteration); });
  }

  void on_display(const TrainingDisplay& event) override {
    Scalars scalars{{"train/loss", event.smoothed_loss}};
    for (const auto& [name, value] : named_output_values(event.outputs)) {
      scalars.emplace_back("train/outputs/" + name, value);
    }
    if (!event.final_pass) {
      scalars.emplace_back("solver/learning_rate", event.learning_rate);
      scalars.emplace_back("solver/loss_scale", event.loss_scale);
      if (event.loss_scale != 1 || event.skipped_updates > 0) {
        scalars.emplace_back("solver/skipped_updates", static_cast<double>(event.skipped_updates));
      }
      if (event.iterations_per_second > 0) {
        scalars.emplace_back("speed/iterations_per_second", event.iterations_per_second);
      }
      if (event.images_per_second >= 0) {
        scalars.emplace_back("speed/images_per_second", event.images_per_second);
      }
      if (event.data_wait_share >= 0) {
        scalars.emplace_back("speed/data_wait_share", event.data_wait_share);
      }
      add_parameter_norms(event.loss_scale, &scalars);
    }
    write([&] {
      writer_.add_scalars(event.iteration, scalars);
      writer_.flush();
    });
  }

  void on_test(const TestDone& event) override {
    const std::string group =
        event.test_net == 0 ? std::string("test/") : "test" + std::to_string(event.test_net) + "/";
    Scalars scalars;
    bool has_loss_output = false;
    for (const auto& [name, value] : named_output_values(event.outputs)) {
      scalars.emplace_back(group + name, value);
      has_loss_output = has_loss_output || name == "loss";
    }
    if (event.has_loss && !has_loss_output) scalars.emplace_back(group + "loss", event.loss);
    write([&] {
      writer_.add_scalars(event.iteration, scalars);
      writer_.flush();
    });
  }

  void on_snapshot(const SnapshotWritten& event) override {
    write([&] {
      for_each_parameter([&](const std::string& name, const Blob& blob) {
        writer_.add_histogram(event.iteration, "weights/" + name,
                              make_histogram(blob.cpu_data(), blob.count()));
      });
      writer_.flush();
    });
  }

  void on_end(const TrainingEnd& /*event*/) override {
    write([&] { writer_.flush(); });
  }

 private:
  // Each learnable parameter once, by its display name ("conv1/0").
  template <typename Visit>
  void for_each_parameter(Visit&& visit) const {
    const Net& net = solver_.net();
    for (std::size_t i = 0; i < net.params().size(); ++i) {
      if (net.param_owners()[i] >= 0) continue;  // shared: its owner counts
      visit(net.param_display_names()[i], *net.params()[i]);
    }
  }

  // The display comes after backward and before the update: the diffs hold
  // this iteration's gradients, still multiplied by the loss scale.
  void add_parameter_norms(double loss_scale, Scalars* scalars) const {
    Scalars gradients;
    for_each_parameter([&](const std::string& name, const Blob& blob) {
      scalars->emplace_back("weight_norm/" + name, std::sqrt(blob.sumsq_data()));
      gradients.emplace_back("gradient_norm/" + name, std::sqrt(blob.sumsq_diff()) / loss_scale);
    });
    scalars->insert(scalars->end(), gradients.begin(), gradients.end());
  }

  // A file that can no longer be written costs the curves, not the training.
  template <typename Write>
  void write(Write&& write_events) {
    if (failed_) return;
    try {
      write_events();
    } catch (const Error& error) {
      failed_ = true;
      XLOG(WARNING) << error.what() << "; no more TensorBoard events are written";
    }
  }

  TensorBoardWriter writer_;
  const Solver& solver_;
  bool failed_ = false;
};

}  // namespace

std::shared_ptr<TrainingObserver> make_tensorboard_recorder(const std::string& directory,
                                                            const Solver& solver) {
  return std::make_shared<TensorBoardRecorder>(directory, solver);
}

}  // namespace xtrain
