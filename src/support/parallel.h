// Independent jobs run side by side: for work whose results do not depend on
// the order it runs in (one output file per job), so that the bytes written
// are the same whatever the thread count.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace ot {

// Helper threads started once for a whole command and handed each of its
// stages in turn; together with the calling thread they are size() threads
// (0 asks for the machine's processors). Started at the command's outset,
// the threads are being created while the inputs are opened: on a virtual
// machine a new thread can wait milliseconds for a processor (measured here:
// 0.3-3 ms, as long as writing a 17 MB device archive). Idle helpers sleep:
// spinning instead was measured slower (the spinning thread takes time from
// its sibling hyperthread and from the kernel's work for the busy one).
class Crew {
 public:
  explicit Crew(unsigned threads = 0);
  ~Crew();
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;

  unsigned size() const { return static_cast<unsigned>(helpers_.size()) + 1; }

  // Runs task() on up to `helpers` helpers while the calling thread runs
  // caller(); returns when all of these have returned. Helpers that had not
  // yet taken the task up when caller() returns no longer do. task must not
  // throw; an exception of caller() is thrown again once the helpers are done.
  void run(unsigned helpers, const std::function<void()>& task, const std::function<void()>& caller);

  // Makes the next run() the crew's last: its helpers leave as soon as they
  // are done with it (or are not wanted for it), so that the crew's end need
  // not wake a sleeping thread to let it go (see above: that can take
  // milliseconds). Later runs are the calling thread's alone. Called by the
  // thread that calls run().
  void last_stage() { last_next_ = true; }

 private:
  void serve();

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void()>* task_ = nullptr;
  unsigned wanted_ = 0;  // helpers still to take task_ up
  unsigned busy_ = 0;    // helpers running it
  bool stop_ = false;
  bool last_ = false;  // helpers leave once the current task is done
  bool last_next_ = false;
  std::vector<std::thread> helpers_;
};

// Work handed out as it is made. produce(add) runs on the calling thread and
// calls add(item) for each item in turn; items go to the back of `items`
// (where they keep their addresses), and meanwhile up to max_threads - 1 of
// the crew's helpers (0: all of them) call consume(index, item) on the items
// already added; the calling thread joins them when produce returns. Every
// item added is consumed. Then the exception of the lowest-numbered failed
// item is thrown again, else the producer's: what a one-by-one run that
// stopped at the first failure would report.
template <typename Item, typename Produce, typename Consume>
void run_pipeline(Crew& crew, unsigned max_threads, std::deque<Item>& items, Produce&& produce, Consume&& consume) {
  const unsigned helpers = max_threads == 0 ? crew.size() - 1 : std::min(max_threads, crew.size()) - 1;
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
  std::exception_ptr producer_error;
  crew.run(helpers, work, [&] {
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
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  if (producer_error) std::rethrow_exception(producer_error);
}

// Calls job(i) for every i in [0, count), on up to `max_threads` of the
// crew's threads (the calling thread is one of them; 0 = all). Every job runs
// to its end; then the exception of the lowest-numbered failed job, if any, is
// thrown again -- the error a one-by-one run would have stopped at.
template <typename Job>
void run_jobs(Crew& crew, std::size_t count, unsigned max_threads, Job&& job) {
  if (max_threads == 0) max_threads = crew.size();
  std::deque<std::size_t> indexes;
  run_pipeline(
      crew, static_cast<unsigned>(std::clamp<std::size_t>(count, 1, max_threads)), indexes,
      [&](auto add) {
        for (std::size_t i = 0; i < count; ++i) add(i);
      },
      [&](std::size_t, std::size_t i) { job(i); });
}

}  // namespace ot
