// BlockingQueue: a FIFO shared by threads, whose pop() waits for an item.
//
// close() wakes every waiter and makes pop() return false once the queue is
// empty, so a thread blocked on a queue can always be stopped. The items live
// in a ring buffer that grows only when full, so a queue whose length stays
// bounded (the prefetch queues) never allocates in the steady state.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace xtrain {

template <typename T>
class BlockingQueue {
 public:
  explicit BlockingQueue(std::size_t initial_capacity = 8)
      : ring_(initial_capacity > 0 ? initial_capacity : 1) {}

  void push(T item) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (size_ == ring_.size()) grow();
      ring_[(head_ + size_) % ring_.size()] = std::move(item);
      ++size_;
    }
    ready_.notify_one();
  }

  // Waits for an item; false (and `out` untouched) if the queue was closed
  // and is empty.
  bool pop(T& out) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return size_ > 0 || closed_; });
    if (size_ == 0) return false;
    take_front(out);
    return true;
  }

  // Does not wait: false if the queue is empty.
  bool try_pop(T& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (size_ == 0) return false;
    take_front(out);
    return true;
  }

  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return size_;
  }

 private:
  void take_front(T& out) {
    out = std::move(ring_[head_]);
    head_ = (head_ + 1) % ring_.size();
    --size_;
  }

  void grow() {
    std::vector<T> larger(ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i)
      larger[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_ = std::move(larger);
    head_ = 0;
  }

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<T> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  bool closed_ = false;
};

}  // namespace xtrain
