// The CANN runtime subset of SPEC §6: initialization and the current device (Note
// [Devices]). Memory and copies are in device_memory.cpp, streams in stream.cpp.
#include "capi/runtime.hpp"

#include <acl/acl.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "backend/registry.hpp"
#include "capi/acl_tensor.hpp"
#include "capi/enum_value.hpp"
#include "capi/executor.hpp"
#include "capi/last_error.hpp"
#include "capi/stream.hpp"

namespace moeperm::capi {
namespace {

using detail::cat;
using detail::DeviceOps;

std::mutex g_mu;
bool g_initialized = false;                        // guarded by g_mu
const DeviceOps *g_device = &detail::kHostDevice;  // guarded by g_mu
Backend g_backend = Backend::automatic;            // the backend of g_device
int g_device_id = 0;                               // g_device's id

// The device MOEPERM_DEVICE names, or Note [Devices]' default.
aclError choose_device(const detail::DeviceEntry **chosen) {
  static const std::vector<detail::DeviceEntry> devices = detail::registered_devices();
  const char *env = std::getenv("MOEPERM_DEVICE");
  const std::string choice = env ? env : "";
  *chosen = &devices.front();  // the host device
  if (choice.empty() || choice == "auto") {
    for (const detail::DeviceEntry &d : devices)
      if (d.ops && !detail::is_host(*d.ops) && d.ops->count() > 0) {
        *chosen = &d;
        break;
      }
    return ACL_SUCCESS;
  }
  std::string names;
  for (const detail::DeviceEntry &d : devices) {
    if (choice == d.name) {
      if (!d.ops)
        return report_acl(ACL_ERROR_INVALID_DEVICE, cat("aclrtSetDevice: MOEPERM_DEVICE=", choice,
                                                        ", but this moeperm was built without ",
                                                        d.title, " (", d.missing, ")"));
      if (d.ops->count() == 0)
        return report_acl(ACL_ERROR_INVALID_DEVICE, cat("aclrtSetDevice: MOEPERM_DEVICE=", choice,
                                                        ", but ", d.ops->none_present));
      *chosen = &d;
      return ACL_SUCCESS;
    }
    names += cat(names.empty() ? "" : ", ", d.name);
  }
  return report_acl(ACL_ERROR_INVALID_DEVICE, cat("aclrtSetDevice: MOEPERM_DEVICE must be ", names,
                                                  " or auto, got '", choice, "'"));
}

aclError check_device_id(const char *api, const DeviceOps &device, int32_t id) {
  const int n = device.count();
  if (id >= 0 && id < n) return ACL_SUCCESS;
  if (detail::is_host(device))
    return report_acl(ACL_ERROR_INVALID_DEVICE,
                      cat(api, ": deviceId must be 0 (", device.units, "), got ", id));
  return report_acl(ACL_ERROR_INVALID_DEVICE,
                    cat(api, ": deviceId must be in [0, ", n, ") (", device.units, "), got ", id));
}

}  // namespace

const DeviceOps &current_device() {
  std::lock_guard lock(g_mu);
  return *g_device;
}

Backend operator_backend() {
  std::lock_guard lock(g_mu);
  return g_backend;
}

detail::Status activate_current_device() {
  const DeviceOps *device;
  int id;
  {
    std::lock_guard lock(g_mu);
    device = g_device;
    id = g_device_id;
  }
  return device->activate(id);
}

}  // namespace moeperm::capi

using moeperm::capi::report_acl;
using moeperm::detail::cat;
namespace mc = moeperm::capi;

extern "C" {

ACL_FUNC_VISIBILITY aclError aclInit(const char *) {
  std::lock_guard lock(mc::g_mu);
  if (mc::g_initialized)
    return report_acl(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
  mc::g_initialized = true;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclFinalize(void) {
  mc::wait_all();
  const int64_t tensors = mc::live_tensors(), streams = mc::live_streams(),
                allocs = mc::live_allocations(), executors = mc::live_executors(),
                int_arrays = mc::live_int_arrays();
  std::lock_guard lock(mc::g_mu);
  if (!mc::g_initialized)
    return report_acl(
        ACL_ERROR_REPEAT_FINALIZE,
        "aclFinalize: not initialized (aclInit was not called, or aclFinalize already was)");
  mc::g_initialized = false;
  if (tensors + streams + allocs + executors + int_arrays > 0)
    return report_acl(ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED,
                      cat("aclFinalize: resources are still alive: ", tensors, " tensor(s), ",
                          streams, " stream(s), ", allocs, " device allocation(s), ", executors,
                          " executor(s) never executed",
                          int_arrays ? cat(", ", int_arrays, " int array(s)") : std::string()));
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId) {
  const moeperm::detail::DeviceEntry *chosen = nullptr;
  if (aclError e = mc::choose_device(&chosen)) return e;
  if (aclError e = mc::check_device_id("aclrtSetDevice", *chosen->ops, deviceId)) return e;
  if (moeperm::detail::Status s = chosen->ops->activate(deviceId); !s.ok())
    return report_acl(ACL_ERROR_INVALID_DEVICE, "aclrtSetDevice: " + s.message);
  std::lock_guard lock(mc::g_mu);
  mc::g_device = chosen->ops;
  mc::g_backend = chosen->backend;
  mc::g_device_id = deviceId;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId) {
  const moeperm::detail::DeviceOps &device = mc::current_device();
  if (aclError e = mc::check_device_id("aclrtResetDevice", device, deviceId)) return e;
  mc::wait_all();
  if (moeperm::detail::Status s = device.synchronize(); !s.ok())
    return report_acl(ACL_ERROR_RT_FAILURE, s.message);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count) {
  if (!count)
    return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count must not be null");
  *count = static_cast<uint32_t>(mc::current_device().count());
  return ACL_SUCCESS;
}

// One implicit context per device: contexts exist for source compatibility only.
ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
  if (!context)
    return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context must not be null");
  if (deviceId != 0)
    return report_acl(
        ACL_ERROR_INVALID_DEVICE,
        cat("aclrtCreateContext: deviceId must be 0 (the CPU device), got ", deviceId));
  static int the_context;
  *context = &the_context;
  return ACL_SUCCESS;
}
ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext) { return ACL_SUCCESS; }

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) {
  return static_cast<size_t>(
      moeperm::element_size(static_cast<moeperm::DType>(mc::enum_value(dataType))));
}

}  // extern "C"
