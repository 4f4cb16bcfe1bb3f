// common/flight_table.hpp — single flight: one computation per key however many threads ask at once.
//
// The first caller of a key owns its flight and computes the value; the others wait on the same
// shared_future. Whether a finished flight stays (memoized: the runtime's loaded kernels) or leaves the
// table (the compile service, whose results live in the kernel cache) is the owner's choice (erase).
//
//   FlightTable<StatusOr<Kernel*>> flights;
//   auto f = flights.join(key);
//   if (f.owner) { f.owner->set_value(compute()); }   // then, unless memoized: flights.erase(key)
//   const StatusOr<Kernel*>& v = f.result.get();
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace kiln {

template <typename T>
class FlightTable {
 public:
  struct Flight {
    std::shared_future<T> result;
    std::unique_ptr<std::promise<T>> owner;  // set for the caller that must compute the value
  };
  Flight join(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flights_.find(key);
    if (it != flights_.end()) return Flight{it->second, nullptr};
    auto promise = std::make_unique<std::promise<T>>();
    std::shared_future<T> result = promise->get_future().share();
    flights_.emplace(key, result);
    return Flight{std::move(result), std::move(promise)};
  }
  void erase(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    flights_.erase(key);
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_future<T>> flights_;
};

}  // namespace kiln
