#include "capi/stream.hpp"

#include <new>
#include <set>
#include <system_error>

#include "backend/registry.hpp"
#include "capi/fault_injection.hpp"
#include "capi/last_error.hpp"
#include "capi/runtime.hpp"
#include "core/messages.hpp"

namespace moeperm::capi {
namespace {

std::mutex g_streams_mu;
std::set<Stream *> &streams() {
  static std::set<Stream *> s;
  return s;
}

bool is_live(Stream *s) {
  std::lock_guard lock(g_streams_mu);
  return streams().count(s) != 0;
}

}  // namespace

Stream::Stream() : worker_([this] { serve(); }) {}

Stream::Stream(const detail::DeviceOps &device, void *native) : device_(&device), native_(native) {}

Stream::~Stream() {
  if (native_) {
    (void)device_->stream_destroy(native_);  // the destroy call synchronized it already
    return;
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void Stream::record_failure(detail::Status failure) {
  if (failure.ok()) return;
  std::lock_guard lock(mu_);
  if (first_error_.ok()) first_error_ = std::move(failure);
}

void Stream::enqueue(Task task) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

detail::Status Stream::synchronize() {
  if (native_) {
    // Callbacks enqueued before this point have run when the stream is synchronized.
    detail::Status device = device_->stream_synchronize(native_);
    std::lock_guard lock(mu_);
    detail::Status data = std::exchange(first_error_, detail::Status::success());
    return data.ok() ? device : data;
  }
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  return std::exchange(first_error_, detail::Status::success());
}

void Stream::wait_idle() {
  if (native_) {
    (void)device_->stream_synchronize(native_);  // a failure stays with the stream's next sync
    return;
  }
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void Stream::serve() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and drained
    Task task = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = !first_error_.ok();
    busy_ = true;
    lock.unlock();
    detail::Status s = skip ? detail::Status::success() : task();
    lock.lock();
    busy_ = false;
    if (!s.ok() && first_error_.ok()) first_error_ = std::move(s);
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

namespace {

void deliver_to_stream(void *context, detail::Status failure) {
  static_cast<Stream *>(context)->record_failure(std::move(failure));
}

}  // namespace

detail::Status submit(aclrtStream handle, std::shared_ptr<const Executor> e, void *workspace,
                      uint64_t workspace_bytes) {
  const detail::DeviceOps &device = detail::device_of(e->plan);
  const bool on_device = detail::runs_on_device(e->plan);
  if (on_device) MOEPERM_TRY(activate_current_device());
  if (!handle) {  // the default stream: synchronous, after every stream has drained
    wait_all();
    return detail::execute_on_stream(e->plan, e->buffers, workspace, workspace_bytes, nullptr);
  }
  auto *s = static_cast<Stream *>(handle);
  if (!is_live(s))
    return detail::inconsistent(
        "aclrtStream", "the stream was not created by aclrtCreateStream or was already destroyed");
  if (&s->device() != &device)
    return detail::inconsistent("aclrtStream",
                                detail::cat("the stream belongs to ", s->device().noun,
                                            ", but the operator was planned for ", device.noun,
                                            " (aclrtSetDevice chose it at that time)"));
  if (on_device)
    return detail::execute_on_stream(e->plan, e->buffers, workspace, workspace_bytes, s->native(),
                                     detail::DeviceErrorSink{deliver_to_stream, s});
  s->enqueue([e, workspace, workspace_bytes] {
    return detail::execute(e->plan, e->buffers, workspace, workspace_bytes);
  });
  return detail::Status::success();
}

detail::Status synchronize_all() {
  std::lock_guard lock(g_streams_mu);
  detail::Status first;
  for (Stream *s : streams()) {
    detail::Status st = s->synchronize();
    if (!st.ok() && first.ok()) first = std::move(st);
  }
  return first;
}

void wait_all() {
  std::lock_guard lock(g_streams_mu);
  for (Stream *s : streams()) s->wait_idle();
}

int64_t live_streams() {
  std::lock_guard lock(g_streams_mu);
  return static_cast<int64_t>(streams().size());
}

}  // namespace moeperm::capi

using moeperm::capi::report_acl;
using moeperm::capi::Stream;

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream) {
  if (!stream)
    return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream must not be null");
  Stream *s = nullptr;
  try {
    if (moeperm::capi::fault_fires(MOEPERM_FAULT_CREATE_STREAM))  // as std::thread fails
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    const moeperm::detail::DeviceOps &device = moeperm::capi::current_device();
    if (device.stream_create) {
      void *native = nullptr;
      moeperm::detail::Status st = moeperm::capi::activate_current_device();
      if (st.ok()) st = device.stream_create(&native);
      if (!st.ok()) return report_acl(ACL_ERROR_RT_FAILURE, "aclrtCreateStream: " + st.message);
      s = new Stream(device, native);
    } else {
      s = new Stream;
    }
  } catch (const std::exception &e) {
    return report_acl(ACL_ERROR_RT_FAILURE,
                      std::string("aclrtCreateStream: cannot start the stream: ") + e.what());
  }
  std::lock_guard lock(moeperm::capi::g_streams_mu);
  moeperm::capi::streams().insert(s);
  *stream = s;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream) {
  auto *s = static_cast<Stream *>(stream);
  {
    std::lock_guard lock(moeperm::capi::g_streams_mu);
    if (!s || moeperm::capi::streams().erase(s) == 0)
      return report_acl(ACL_ERROR_INVALID_PARAM,
                        "aclrtDestroyStream: stream was not created by aclrtCreateStream or was "
                        "already destroyed");
  }
  // Pending work completes first; a failure nobody collected is returned here.
  moeperm::detail::Status st = s->synchronize();
  delete s;
  if (!st.ok())
    return report_acl(
        static_cast<aclError>(st.code),
        "aclrtDestroyStream: work on the stream failed before it was destroyed: " + st.message);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream) {
  moeperm::detail::Status st;
  if (!stream) {
    st = moeperm::capi::synchronize_all();
  } else {
    auto *s = static_cast<Stream *>(stream);
    if (!moeperm::capi::is_live(s))
      return report_acl(ACL_ERROR_INVALID_PARAM,
                        "aclrtSynchronizeStream: stream was not created by aclrtCreateStream or "
                        "was already destroyed");
    st = s->synchronize();
  }
  if (!st.ok()) return report_acl(static_cast<aclError>(st.code), st.message);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void) {
  return aclrtSynchronizeStream(nullptr);
}

}  // extern "C"
