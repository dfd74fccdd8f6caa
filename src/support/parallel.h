// Independent jobs run side by side: for work whose results do not depend on
// the order it runs in (one output file per job), so that the bytes written
// are the same whatever the thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace ot {

// Calls job(i) for every i in [0, count), on up to `max_threads` threads (the
// calling thread is one of them; 0 = the machine's processors). Every job runs
// to its end; then the exception of the lowest-numbered failed job, if any, is
// thrown again -- the error a one-by-one run would have stopped at.
template <typename Job>
void run_jobs(std::size_t count, unsigned max_threads, Job&& job) {
  if (max_threads == 0) max_threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>(count, max_threads);
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        job(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: fewer do the same work
    }
  }
  work();
  for (std::thread& t : helpers) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ot
