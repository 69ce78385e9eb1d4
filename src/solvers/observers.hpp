// Sending a training event to every observer (xtrain/training_observer.hpp),
// in the order they were added, and the net outputs the events carry.
#pragma once

#include <memory>
#include <vector>

#include "xtrain/net.hpp"
#include "xtrain/training_observer.hpp"

namespace xtrain {

template <typename Event>
void notify(const std::vector<std::shared_ptr<TrainingObserver>>& observers,
            void (TrainingObserver::*handler)(const Event&), const Event& event) {
  for (const auto& observer : observers) ((*observer).*handler)(event);
}

// The net's output blobs, element by element in Caffe's order, as they are
// now (net_output_data) or as given (`values`: one per element, e.g. the
// means of a test), with their names and loss weights.
std::vector<float> net_output_data(const Net& net);
std::vector<NetOutputValue> net_output_values(const Net& net, const std::vector<float>& values);

}  // namespace xtrain
