#include "xtrain/data_wait.hpp"

#include "xtrain/layer.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

DataWaitReporter* data_wait_reporter(Layer& layer) {
  return dynamic_cast<DataWaitReporter*>(&layer);
}

bool reports_data_wait(const Net& net) {
  for (const auto& layer : net.layers()) {
    if (data_wait_reporter(*layer) != nullptr) return true;
  }
  return false;
}

double take_data_wait_seconds(const Net& net) {
  double seconds = 0;
  for (const auto& layer : net.layers()) {
    if (DataWaitReporter* reporter = data_wait_reporter(*layer)) {
      seconds += reporter->take_data_wait_seconds();
    }
  }
  return seconds;
}

}  // namespace xtrain
