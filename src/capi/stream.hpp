// Note [Streams]: a CPU stream is an in-order queue served by one worker thread. Work
// enqueued on it runs in submission order. The first failure is kept and returned (and
// cleared) by the next aclrtSynchronizeStream; work enqueued after a failure is skipped
// until then, since it may depend on outputs that were never written. The default stream
// (a null aclrtStream) is synchronous: its work runs on the calling thread after all
// streams have drained, so the second phase returns the kernel's own status.
#pragma once

#include <acl/acl.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "core/status.hpp"

namespace moeperm::capi {

class Stream {
 public:
  using Task = std::function<detail::Status()>;
  Stream();
  ~Stream();  // drains, then stops the worker
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  void enqueue(Task task);
  // Waits until every enqueued task has finished; returns and clears the first failure.
  detail::Status synchronize();
  // Waits like synchronize() but leaves the failure for the next synchronize().
  void wait_idle();

 private:
  void serve();

  std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Task> queue_;
  bool busy_ = false, stopping_ = false;
  detail::Status first_error_;
  std::thread worker_;
};

// Runs `task` on `stream` (or synchronously for the default stream) and returns what the
// second phase should return: the task's status on the default stream, else success once
// enqueued.
detail::Status submit(aclrtStream stream, Stream::Task task);

// Waits for every live stream; returns (and clears) the first failure found. Only
// aclrtSynchronizeStream(nullptr) / aclrtSynchronizeDevice collect errors this way.
detail::Status synchronize_all();
// Waits for every live stream without collecting their failures: what ordering points
// (aclrtMemcpy, aclrtFree, default-stream work, ...) need, so that a failure stays with
// its stream until that stream is synchronized.
void wait_all();
int64_t live_streams();

}  // namespace moeperm::capi
