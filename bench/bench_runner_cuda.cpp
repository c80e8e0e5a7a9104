// `moeperm bench --device cuda`: the CUDA backend timed with CUDA events on one stream, every
// operator of the token path (token_path.hpp) in its order. Operator and ceiling are
// interleaved on the same stream, so both see the same clocks and the same L2 state; the
// ceiling is a device-to-device cudaMemcpyAsync moving the same bytes (reading half,
// writing half), the practical bound of a memory-bound operator. Each operator's outputs are
// compared once, bit for bit, with the CPU backend's on the same path.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench.hpp"
#include "token_path.hpp"

namespace moeperm::bench {
namespace {

void check(cudaError_t err, const char *what) {
  if (err != cudaSuccess)
    throw Error(Code::runtime_error, std::string("moeperm bench --device cuda: ") + what + ": " +
                                         cudaGetErrorString(err));
}

// One device allocation with the host tensor's whole storage (outputs keep their poison).
class DeviceCopy {
 public:
  explicit DeviceCopy(const problem_model::HostTensor &t) : bytes_(t.storage.size()) {
    if (bytes_ == 0) return;
    check(cudaMalloc(&ptr_, bytes_), "cudaMalloc");
    check(cudaMemcpy(ptr_, t.storage.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  explicit DeviceCopy(size_t bytes) : bytes_(bytes) {
    if (bytes_ == 0) return;
    check(cudaMalloc(&ptr_, bytes_), "cudaMalloc");
    check(cudaMemset(ptr_, 1, bytes_), "cudaMemset");
  }
  ~DeviceCopy() {
    if (ptr_) (void)cudaFree(ptr_);
  }
  DeviceCopy(const DeviceCopy &) = delete;
  DeviceCopy &operator=(const DeviceCopy &) = delete;
  void *get() const { return ptr_; }
  std::span<std::byte> span() const { return {static_cast<std::byte *>(ptr_), bytes_}; }
  void download(problem_model::HostTensor &t) const {
    if (bytes_)
      check(cudaMemcpy(t.storage.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

 private:
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

struct Failures {
  std::atomic<int> count{0};
  std::string first;  // written by the first failure only
};

void on_done(void *context, Code code, const char *message) {
  if (code == Code::ok) return;
  auto *f = static_cast<Failures *>(context);
  if (f->count.fetch_add(1) == 0) f->first = message;
}

// Device copies of every tensor of a path (whole storages: outputs keep their poison).
class Mirror {
 public:
  explicit Mirror(TokenPath &path) {
    for (problem_model::HostTensor *t : path.tensors()) {
      if (t->storage.empty()) continue;
      copies_.push_back(std::make_unique<DeviceCopy>(*t));
      at_[t->data()] = copies_.back().get();
    }
  }
  void *device(const void *host) const {
    const auto it = at_.find(host);
    if (it == at_.end())
      throw Error(Code::runtime_error, "moeperm bench --device cuda: a tensor has no device copy");
    return it->second->get();
  }
  void download(problem_model::HostTensor &t) const {
    if (!t.storage.empty()) at_.at(t.data())->download(t);
  }

 private:
  std::vector<std::unique_ptr<DeviceCopy>> copies_;
  std::unordered_map<const void *, const DeviceCopy *> at_;
};

// One operator on the GPU: its plan, device tensors, workspace and samples.
struct DeviceOp {
  const PathOp &op;
  Plan plan;
  OpData data;
  DeviceCopy workspace;
  std::vector<double> op_ms, copy_ms;

  DeviceOp(const PathOp &o, const Mirror &m)
      : op(o),
        plan(o.plan_on(Backend::cuda)),
        data(translated(o.data, [&](const void *p) { return m.device(p); })),
        workspace(plan.workspace_bytes()) {}
  void enqueue(cudaStream_t stream, Failures &failures) const {
    std::visit(
        [&](const auto &d) { run_async(plan, d, workspace.span(), stream, on_done, &failures); },
        data);
  }
};

void require_gpu() {
  if (!cuda_built() || cuda_device_count() == 0)
    throw Error(Code::runtime_error,
                cuda_built() ? "moeperm bench --device cuda: the CUDA driver reports no GPU"
                             : "moeperm bench --device cuda: this moeperm was built without CUDA");
  check(cudaSetDevice(0), "cudaSetDevice");
}

// The CPU backend's outputs of the same path, for the bitwise comparison.
std::unique_ptr<TokenPath> cpu_outputs(const Case &c) {
  CaseResult unused;
  std::unique_ptr<TokenPath> want = make_token_path(c.spec, unused);
  for (const PathOp &op : want->ops) {
    const Plan plan = op.plan_on(Backend::cpu);
    std::vector<std::byte> ws(plan.workspace_bytes());
    run_on_host(plan, op.data, ws);
  }
  return want;
}

}  // namespace

CaseResult run_case_cuda(const Case &c, const Options &o) {
  require_gpu();
  CaseResult res;
  res.c = c;
  const std::unique_ptr<TokenPath> want = cpu_outputs(c);
  const std::unique_ptr<TokenPath> path = make_token_path(c.spec, res);
  const Mirror mirror(*path);
  std::vector<std::unique_ptr<DeviceOp>> ops;
  double max_bytes = 0;
  for (const PathOp &op : path->ops) {
    ops.push_back(std::make_unique<DeviceOp>(op, mirror));
    max_bytes = std::max(max_bytes, op.result->bytes);
  }
  res.plan = ops[3]->plan.to_string();  // the permute Grad's
  DeviceCopy copy_src(static_cast<size_t>(max_bytes / 2)), copy_dst(copy_src.span().size());

  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t ev[3];
  for (cudaEvent_t &e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  Failures failures;
  auto copy = [&](const DeviceOp &d) {
    check(
        cudaMemcpyAsync(copy_dst.get(), copy_src.get(), static_cast<size_t>(d.op.result->bytes / 2),
                        cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync");
  };

  // Once, in order, checked: each operator reads what the one before it wrote, as in training.
  for (const auto &d : ops) d->enqueue(stream, failures);
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (failures.count) throw Error(Code::invalid_param, failures.first);
  for (size_t i = 0; i < ops.size(); ++i) {
    int64_t differences = 0;
    for (size_t k = 0; k < path->ops[i].outputs.size(); ++k) {
      mirror.download(*path->ops[i].outputs[k]);
      differences +=
          problem_model::count_bit_differences(*path->ops[i].outputs[k], *want->ops[i].outputs[k]);
    }
    path->ops[i].result->bit_differences = static_cast<int>(differences);
  }

  for (int i = 0; i < o.warmup; ++i)
    for (const auto &d : ops) {
      d->enqueue(stream, failures);
      copy(*d);
    }
  for (int i = 0; i < o.runs; ++i)
    for (const auto &d : ops) {
      check(cudaEventRecord(ev[0], stream), "cudaEventRecord");
      d->enqueue(stream, failures);
      check(cudaEventRecord(ev[1], stream), "cudaEventRecord");
      copy(*d);
      check(cudaEventRecord(ev[2], stream), "cudaEventRecord");
      check(cudaEventSynchronize(ev[2]), "cudaEventSynchronize");
      float ms[2];
      for (int k = 0; k < 2; ++k)
        check(cudaEventElapsedTime(&ms[k], ev[k], ev[k + 1]), "cudaEventElapsedTime");
      d->op_ms.push_back(ms[0]);
      d->copy_ms.push_back(ms[1]);
    }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (cudaEvent_t e : ev) (void)cudaEventDestroy(e);
  (void)cudaStreamDestroy(stream);
  if (failures.count) throw Error(Code::invalid_param, failures.first);
  for (const auto &d : ops) finish(*d->op.result, d->op_ms, d->copy_ms);
  return res;
}

}  // namespace moeperm::bench
