// Streams of the CANN runtime subset: a worker-thread queue on the host device, a native
// stream on a device that has them (Note [Streams], src/core/notes.md).
#pragma once

#include <acl/acl.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "capi/executor.hpp"
#include "core/plan.hpp"
#include "core/status.hpp"
#include "device/device.hpp"

namespace moeperm::capi {

class Stream {
 public:
  using Task = std::function<detail::Status()>;
  Stream();  // a host stream: starts the worker thread
  // A stream over `native`, a native stream of `device`, which it owns and destroys.
  Stream(const detail::DeviceOps &device, void *native);
  ~Stream();  // drains, then stops the worker
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  void enqueue(Task task);
  // Waits until every enqueued task has finished; returns and clears the first failure.
  detail::Status synchronize();
  // Waits like synchronize() but leaves the failure for the next synchronize().
  void wait_idle();
  // The device the stream belongs to, and its native stream (null for a host stream).
  const detail::DeviceOps &device() const { return *device_; }
  void *native() const { return native_; }
  // Keeps `failure` for the next synchronize() unless an earlier one is kept already.
  void record_failure(detail::Status failure);

 private:
  void serve();

  std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Task> queue_;
  bool busy_ = false, stopping_ = false;
  detail::Status first_error_;
  const detail::DeviceOps *device_ = &detail::kHostDevice;
  void *native_ = nullptr;
  std::thread worker_;
};

// Runs a planned executor on `stream`, or synchronously on the default stream (a null
// handle), and returns what the second phase should return: the run's status on the default
// stream, else success once enqueued (a failure then goes to the stream). A host plan's run
// is queued on the stream's worker; a device plan is enqueued on the stream's native stream
// by its backend. The stream must belong to the plan's device.
detail::Status submit(aclrtStream stream, std::shared_ptr<const Executor> executor, void *workspace,
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
