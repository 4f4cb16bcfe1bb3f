// tuner/thread_pool.hpp — a fixed pool of worker threads for the tuner's parallel compiles.
//
// Tasks run in submission order (FIFO), so candidates submitted best-estimate first compile first
// and the timing loop can start on them while the rest compile. The destructor finishes queued
// tasks and joins. Tasks must not throw (kiln code returns Status).
//
//   ThreadPool pool(8);
//   std::future<StatusOr<CompiledKernel>> f = pool.submit([&] { return rt.compile(...); });
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace kiln {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    const int n = threads > 0 ? threads : 1;
    workers_.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  template <typename F>
  std::future<std::invoke_result_t<F>> submit(F f) {
    using R = std::invoke_result_t<F>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(f));
    std::future<R> fut = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return fut;
  }

  int size() const { return static_cast<int>(workers_.size()); }

 private:
  void work() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping and drained
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace kiln
