// The array side of the bindings (arrays.cpp): DLPack arrays to moeperm descriptors and
// data pointers, the one device of a call, outputs allocated by the Python caller, and the
// workspace. bindings.cpp binds the operators with these.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <moeperm/moeperm.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace moeperm_py {

namespace nb = nanobind;

using InArray = nb::ndarray<nb::ro>;  // inputs: read-only views are accepted
using OutArray = nb::ndarray<>;       // outputs: must be writable

// DLPack device types (dlpack.h DLDeviceType).
constexpr int kDLCPU = 1;
constexpr int kDLCUDA = 2;
constexpr int kDLCUDAHost = 3;  // pinned host memory: host-addressable

// Throws moeperm::Error 161002 with `message`.
[[noreturn]] void invalid(const std::string &message);

// Where the operands of one call live. All must share one device.
struct Device {
  bool set = false;
  bool cuda = false;
  int type = 0;
  int id = 0;
  const char *first = nullptr;  // the operand that fixed the device, for messages
};

std::string device_string(int type, int id);

// Records where `a` lives; the first operand fixes the call's device, a later one elsewhere
// is an error that names both.
template <class Array>
inline void note_device(const char *api, Device &dev, const char *name, const Array &a) {
  const int type = a.device_type();
  if (type != kDLCPU && type != kDLCUDAHost && type != kDLCUDA)
    invalid(std::string(api) + ": " + name + " is on " + device_string(type, a.device_id()) +
            ", expected a CPU or CUDA tensor");
  const bool cuda = type == kDLCUDA;
  const int id = cuda ? a.device_id() : 0;
  if (!dev.set) {
    dev = Device{true, cuda, type, id, name};
    return;
  }
  if (dev.cuda != cuda || dev.id != id)
    invalid(std::string(api) + ": " + name + " is on " + device_string(type, id) + " but " +
            dev.first + " is on " + device_string(dev.type, dev.id) +
            ", expected all tensors on one device");
}

// The data pointer of a view's storage base (its lowest-addressed element, the descriptor's
// offset counting from it).
const void *storage_base(const InArray &a);

// The descriptor of an input view; `bf16_view`: a uint16 array that holds bfloat16 data
// (NumPy's bfloat16 has no DLPack export, so the Python layer passes arr.view(uint16)).
moeperm::TensorDesc describe(const char *api, const char *name, const InArray &a, bool bf16_view);

// An output the caller allocated through alloc(name, shape): checked against the contiguous
// descriptor the plan was made with (a mismatch is a bug in the Python layer).
struct Allocated {
  nb::object owner;  // keeps the array alive until the kernel is done
  void *data = nullptr;
};
Allocated allocate(const char *api, const nb::callable &alloc, const char *name,
                   const moeperm::TensorDesc &want, const Device &dev);

// The workspace: host memory owned here for host plans; for CUDA plans device memory from
// the caller's allocator (e.g. PyTorch's caching allocator), as the CUDA backend requires.
struct Workspace {
  std::vector<std::byte> host;
  Allocated device;
  std::span<std::byte> span;
};
Workspace make_workspace(const char *api, const moeperm::Plan &plan, const Device &dev,
                         const nb::callable &alloc);

// The backend for tensors on `dev`: the automatic host choice, or CUDA (an error when this
// moeperm was built without it).
moeperm::PlanOptions plan_options(const char *api, const Device &dev);

// A tensor described without data, for infer_outputs: (dtype name, shape). The names are
// moeperm::to_string(DType)'s ("float32", "bfloat16", "bool", ...).
using Spec = std::pair<std::string, std::vector<int64_t>>;
std::optional<moeperm::DType> dtype_from_name(const std::string &name);
moeperm::TensorDesc describe_spec(const char *api, const char *name, const Spec &spec);

// infer_outputs' answer as Python sees it: (output name, shape, dtype name) per output.
using OutputList = std::vector<std::tuple<std::string, std::vector<int64_t>, std::string>>;
struct NamedOutput {
  const char *name;
  const moeperm::TensorDesc *desc;  // null: the operator has no such output for this call
};
OutputList output_list(std::initializer_list<NamedOutput> outputs);

// The unpermute pair's functions on the module (unpermute_bindings.cpp).
void bind_unpermute(nb::module_ &m);
void bind_ragged(nb::module_ &m);
void bind_sort_chunks(nb::module_ &m);

}  // namespace moeperm_py
