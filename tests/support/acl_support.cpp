#include "acl_support.hpp"

#include <acl/acl.h>

#include <algorithm>
#include <vector>

#include "device_memory.hpp"

namespace moeperm::testing {
namespace {

// The two-phase call of operator Op over p's tensors (data pointers through `address`: host
// or device), with a workspace of exactly the size the first phase asked for.
template <class Op, class Address, class Workspace>
CStatus c_two_phase(Problem &p, const typename Op::Desc &desc, Address &&address,
                    Workspace &&make_workspace) {
  const typename Op::Args a = Op::args(desc);
  const OperandTensors<Op> t = make_operand_tensors<Op>(
      a, [&](const auto &operand) { return address((p.*operand.tensor).data()); });
  uint64_t ws_size = 0;
  aclOpExecutor *exec = nullptr;
  const int32_t st = Op::first_phase(t.handles, a, &ws_size, &exec);
  if (st != 0) return c_status(st);
  auto ws = make_workspace(ws_size);
  return c_status(Op::second_phase(ws.get(), ws_size, exec, nullptr));
}

// A host workspace of exactly `bytes` (null when 0).
class HostWorkspace {
 public:
  explicit HostWorkspace(uint64_t bytes) : bytes_(static_cast<size_t>(bytes)) {}
  void *get() { return bytes_.empty() ? nullptr : bytes_.data(); }

 private:
  std::vector<std::byte> bytes_;
};

template <class Op>
CStatus c_run(Problem &p, Backend memory, const typename Op::Desc &desc) {
  if (!backend_info(memory).device)
    return c_two_phase<Op>(
        p, desc, [](void *host) { return host; }, [](uint64_t n) { return HostWorkspace(n); });
  DeviceProblem dev(p);
  const CStatus result = c_two_phase<Op>(
      p, desc, [&](void *host) { return dev(host); },
      [](uint64_t n) { return DeviceWorkspace(n); });
  dev.download();
  return result;
}

}  // namespace

CStatus c_status(int32_t code) {
  return CStatus{code, code == 0 ? std::string() : std::string(aclGetRecentErrMsg())};
}

CStatus c_forward(Problem &p, Backend memory) {
  return c_run<PermuteOp>(p, memory, PermuteOp::desc(p));
}
CStatus c_backward(Problem &p, Backend memory) {
  return c_run<PermuteGradOp>(p, memory, PermuteGradOp::desc(p));
}
CStatus c_run_with(Problem &p, Backend memory, const PermuteDesc &desc) {
  return c_run<PermuteOp>(p, memory, desc);
}
CStatus c_run_with(Problem &p, Backend memory, const PermuteGradDesc &desc) {
  return c_run<PermuteGradOp>(p, memory, desc);
}

}  // namespace moeperm::testing
