// Note [Streams]: a CPU stream is an in-order queue served by one worker thread. Work
// enqueued on it runs in submission order. The first failure is kept and returned (and
// cleared) by the next aclrtSynchronizeStream; work enqueued after a failure is skipped
// until then, since it may depend on outputs that were never written. The default stream
// (a null aclrtStream) is synchronous: its work runs on the calling thread after all
// streams have drained, so the second phase returns the kernel's own status.
//
// On a GPU (Note [Devices]) a stream wraps a blocking CUDA stream instead of a worker
// thread, with the same contract: operators are enqueued asynchronously, and a data error
// found on the device (Note [Device errors]) is delivered by a stream callback and returned
// by the next aclrtSynchronizeStream (or aclrtDestroyStream); work enqueued after it still
// runs, but each operator's own check kernels keep it from writing on bad input. The
// default stream is synchronous there too: the second phase waits and returns the error.
#pragma once

#include <acl/acl.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::capi {

class Stream {
 public:
  using Task = std::function<detail::Status()>;
  Stream();  // a CPU stream: starts the worker thread
  // A GPU stream over `cuda_stream` (a cudaStream_t), which it owns and destroys.
  explicit Stream(void *cuda_stream);
  ~Stream();  // drains, then stops the worker
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  void enqueue(Task task);
  // Waits until every enqueued task has finished; returns and clears the first failure.
  detail::Status synchronize();
  // Waits like synchronize() but leaves the failure for the next synchronize().
  void wait_idle();
  // The CUDA stream of a GPU stream; null for a CPU stream.
  void *cuda_stream() const { return cuda_; }
  // Keeps `failure` for the next synchronize() unless an earlier one is kept already.
  void record_failure(detail::Status failure);

 private:
  void serve();

  std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Task> queue_;
  bool busy_ = false, stopping_ = false;
  detail::Status first_error_;
  void *cuda_ = nullptr;
  std::thread worker_;
};

// Runs `task` on `stream` (or synchronously for the default stream) and returns what the
// second phase should return: the task's status on the default stream, else success once
// enqueued.
detail::Status submit(aclrtStream stream, Stream::Task task);

// Runs a plan of the CUDA backend on `stream`: asynchronously on a GPU stream (a data error
// goes to that stream), synchronously on the default stream (the error is returned).
detail::Status submit_to_gpu(aclrtStream stream, const detail::Plan &plan,
                             const detail::Buffers &buffers, void *workspace,
                             uint64_t workspace_bytes);

// Waits for every live stream; returns (and clears) the first failure found. Only
// aclrtSynchronizeStream(nullptr) / aclrtSynchronizeDevice collect errors this way.
detail::Status synchronize_all();
// Waits for every live stream without collecting their failures: what ordering points
// (aclrtMemcpy, aclrtFree, default-stream work, ...) need, so that a failure stays with
// its stream until that stream is synchronized.
void wait_all();
int64_t live_streams();

}  // namespace moeperm::capi
