// ordered_parallel_map: produce(i) for every i in [0, count) on a pool of
// worker threads, consume(i, result) on the calling thread in order of i.
//
// Workers claim indices one at a time, so a slow item (a large JPEG) holds
// up only itself; at most `window` results wait between the workers and the
// consumer, so memory stays bounded however fast the workers run. A result
// may be consumed while later ones are still being produced: decoding and
// writing overlap.
//
// If produce(i) throws, the exception is rethrown by the calling thread when
// it reaches index i; if consume throws, the workers are stopped and joined
// before the exception leaves. Either way no thread outlives the call.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace xtrain {

template <typename Result, typename Produce, typename Consume>
void ordered_parallel_map(std::size_t count, int threads, std::size_t window, Produce produce,
                          Consume consume) {
  if (threads < 1) threads = 1;
  if (window < static_cast<std::size_t>(threads)) window = static_cast<std::size_t>(threads);

  struct Slot {
    std::optional<Result> result;
    std::exception_ptr error;
    bool ready = false;
  };
  std::vector<Slot> slots(window);
  std::mutex mutex;
  std::condition_variable result_ready;
  std::condition_variable slot_free;
  std::size_t next_to_claim = 0;
  std::size_t next_to_consume = 0;
  bool stopping = false;

  auto work = [&] {
    for (;;) {
      std::size_t index;
      {
        std::unique_lock<std::mutex> lock(mutex);
        // The slot of `index` is free once index - window was consumed.
        slot_free.wait(lock, [&] {
          return stopping || next_to_claim >= count || next_to_claim < next_to_consume + window;
        });
        if (stopping || next_to_claim >= count) return;
        index = next_to_claim++;
      }
      Slot done;
      try {
        done.result.emplace(produce(index));
      } catch (...) {
        done.error = std::current_exception();
      }
      done.ready = true;
      {
        std::lock_guard<std::mutex> lock(mutex);
        slots[index % window] = std::move(done);
      }
      result_ready.notify_all();
    }
  };

  std::vector<std::thread> workers;
  // Stops and joins the workers however the consumer loop ends.
  struct Joiner {
    std::vector<std::thread>& workers;
    std::mutex& mutex;
    bool& stopping;
    std::condition_variable& slot_free;
    ~Joiner() {
      {
        std::lock_guard<std::mutex> lock(mutex);
        stopping = true;
      }
      slot_free.notify_all();
      for (std::thread& worker : workers) worker.join();
    }
  } joiner{workers, mutex, stopping, slot_free};
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) workers.emplace_back(work);

  for (std::size_t index = 0; index < count; ++index) {
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex);
      Slot& waiting = slots[index % window];
      result_ready.wait(lock, [&] { return waiting.ready; });
      slot = std::move(waiting);
      waiting = Slot();
      ++next_to_consume;
    }
    slot_free.notify_all();
    if (slot.error) std::rethrow_exception(slot.error);
    consume(index, std::move(*slot.result));
  }
}

}  // namespace xtrain
