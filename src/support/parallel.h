// Independent jobs run side by side: for work whose results do not depend on
// the order it runs in (one output file per job), so that the bytes written
// are the same whatever the thread count.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace ot {

// Work handed out as it is made. produce(add) runs on the calling thread and
// calls add(item) for each item in turn; items go to the back of `items`
// (where they keep their addresses), and meanwhile up to max_threads - 1
// helpers call consume(index, item) on the items already added; the calling
// thread joins them when produce returns. Every item added is consumed. Then
// the exception of the lowest-numbered failed item is thrown again, else the
// producer's: what a one-by-one run that stopped at the first failure would report.
template <typename Item, typename Produce, typename Consume>
void run_pipeline(unsigned max_threads, std::deque<Item>& items, Produce&& produce, Consume&& consume) {
  if (max_threads == 0) max_threads = std::max(1u, std::thread::hardware_concurrency());
  std::mutex mutex;
  std::condition_variable more;
  std::size_t next = 0;
  bool produced = false;
  std::vector<std::exception_ptr> errors;  // by item
  auto work = [&] {
    for (;;) {
      std::size_t k;
      Item* item;
      {
        std::unique_lock lock(mutex);
        more.wait(lock, [&] { return next < items.size() || produced; });
        if (next >= items.size()) return;
        k = next++;
        item = &items[k];
      }
      try {
        consume(k, *item);
      } catch (...) {
        std::lock_guard lock(mutex);
        errors[k] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < max_threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: fewer do the same work
    }
  }
  std::exception_ptr producer_error;
  try {
    produce([&](Item item) {
      {
        std::lock_guard lock(mutex);
        items.push_back(std::move(item));
        errors.emplace_back();
      }
      more.notify_one();
    });
  } catch (...) {
    producer_error = std::current_exception();
  }
  {
    std::lock_guard lock(mutex);
    produced = true;
  }
  more.notify_all();
  work();
  for (std::thread& t : helpers) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  if (producer_error) std::rethrow_exception(producer_error);
}

// Calls job(i) for every i in [0, count), on up to `max_threads` threads (the
// calling thread is one of them; 0 = the machine's processors). Every job runs
// to its end; then the exception of the lowest-numbered failed job, if any, is
// thrown again -- the error a one-by-one run would have stopped at.
template <typename Job>
void run_jobs(std::size_t count, unsigned max_threads, Job&& job) {
  if (max_threads == 0) max_threads = std::max(1u, std::thread::hardware_concurrency());
  std::deque<std::size_t> indexes;
  run_pipeline(
      static_cast<unsigned>(std::clamp<std::size_t>(count, 1, max_threads)), indexes,
      [&](auto add) {
        for (std::size_t i = 0; i < count; ++i) add(i);
      },
      [&](std::size_t, std::size_t i) { job(i); });
}

}  // namespace ot
