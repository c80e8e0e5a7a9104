// `moeperm bench --device cuda`: the CUDA backend timed with CUDA events on one stream.
// Operator and ceiling are interleaved on the same stream, so both see the same clocks and
// the same L2 state; the ceiling is a device-to-device cudaMemcpyAsync moving the same
// bytes (reading half, writing half), the practical bound of a memory-bound operator.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "bench.hpp"

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

}  // namespace

CaseResult run_case_cuda(const Case &c, const Options &o) {
  if (!cuda_built() || cuda_device_count() == 0)
    throw Error(Code::runtime_error,
                cuda_built() ? "moeperm bench --device cuda: the CUDA driver reports no GPU"
                             : "moeperm bench --device cuda: this moeperm was built without CUDA");
  check(cudaSetDevice(0), "cudaSetDevice");
  CaseResult res;
  res.c = c;
  problem_model::Problem p = problem_model::make_problem(c.spec);
  // The CPU backend's outputs, for the bitwise comparison.
  problem_model::Problem want = problem_model::make_problem(c.spec);
  run(plan_permute(want.permute_desc(), {Backend::cpu}), want.permute_data(), {});
  {
    const Plan b = plan_permute_grad(want.grad_desc(), {Backend::cpu});
    std::vector<std::byte> ws(b.workspace_bytes());
    run(b, want.grad_data(), ws);
  }

  DeviceCopy tokens(p.tokens), map(p.routing_map), probs(p.probs), permuted(p.permuted_tokens),
      permuted_probs(p.permuted_probs), sorted(p.sorted_indices), grad(p.grad),
      probs_grad(p.probs_grad), tokens_grad(p.tokens_grad), dense_grad(p.dense_probs_grad);
  const Plan fwd = plan_permute(p.permute_desc(), {Backend::cuda});
  const Plan bwd = plan_permute_grad(p.grad_desc(), {Backend::cuda});
  res.plan = bwd.to_string();
  DeviceCopy ws_f(fwd.workspace_bytes()), ws_b(bwd.workspace_bytes());
  const bool probs_on = c.spec.with_probs;
  const PermuteData fd{tokens.get(),
                       map.get(),
                       probs_on ? probs.get() : nullptr,
                       permuted.get(),
                       probs_on ? permuted_probs.get() : nullptr,
                       sorted.get()};
  const PermuteGradData bd{grad.get(),        probs_on ? probs_grad.get() : nullptr,
                           sorted.get(),      map.get(),
                           tokens_grad.get(), probs_on ? dense_grad.get() : nullptr};
  res.forward.bytes = static_cast<double>(problem_model::permute_bytes(c.spec));
  res.backward.bytes = static_cast<double>(problem_model::permute_grad_bytes(c.spec));
  DeviceCopy copy_src(static_cast<size_t>(std::max(res.forward.bytes, res.backward.bytes) / 2));
  DeviceCopy copy_dst(static_cast<size_t>(std::max(res.forward.bytes, res.backward.bytes) / 2));
  const auto half_f = static_cast<size_t>(res.forward.bytes / 2);
  const auto half_b = static_cast<size_t>(res.backward.bytes / 2);

  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t ev[5];
  for (cudaEvent_t &e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  Failures failures;
  auto forward = [&] { run_async(fwd, fd, ws_f.span(), stream, on_done, &failures); };
  auto backward = [&] { run_async(bwd, bd, ws_b.span(), stream, on_done, &failures); };
  auto copy = [&](size_t n) {
    check(cudaMemcpyAsync(copy_dst.get(), copy_src.get(), n, cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync");
  };

  // Once, checked: the forward's S feeds the backward, as in training.
  forward();
  backward();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  if (failures.count) throw Error(Code::invalid_param, failures.first);
  permuted.download(p.permuted_tokens);
  sorted.download(p.sorted_indices);
  tokens_grad.download(p.tokens_grad);
  res.forward.bit_differences = static_cast<int>(
      problem_model::count_bit_differences(p.permuted_tokens, want.permuted_tokens) +
      problem_model::count_bit_differences(p.sorted_indices, want.sorted_indices));
  res.backward.bit_differences =
      static_cast<int>(problem_model::count_bit_differences(p.tokens_grad, want.tokens_grad));
  if (probs_on) {
    permuted_probs.download(p.permuted_probs);
    dense_grad.download(p.dense_probs_grad);
    res.forward.bit_differences += static_cast<int>(
        problem_model::count_bit_differences(p.permuted_probs, want.permuted_probs));
    res.backward.bit_differences += static_cast<int>(
        problem_model::count_bit_differences(p.dense_probs_grad, want.dense_probs_grad));
  }

  for (int i = 0; i < o.warmup; ++i) {
    forward();
    copy(half_f);
    backward();
    copy(half_b);
  }
  std::vector<double> tf, tb, cf, cb;
  for (int i = 0; i < o.runs; ++i) {
    check(cudaEventRecord(ev[0], stream), "cudaEventRecord");
    forward();
    check(cudaEventRecord(ev[1], stream), "cudaEventRecord");
    copy(half_f);
    check(cudaEventRecord(ev[2], stream), "cudaEventRecord");
    backward();
    check(cudaEventRecord(ev[3], stream), "cudaEventRecord");
    copy(half_b);
    check(cudaEventRecord(ev[4], stream), "cudaEventRecord");
    check(cudaEventSynchronize(ev[4]), "cudaEventSynchronize");
    float ms[4];
    for (int k = 0; k < 4; ++k)
      check(cudaEventElapsedTime(&ms[k], ev[k], ev[k + 1]), "cudaEventElapsedTime");
    tf.push_back(ms[0]);
    cf.push_back(ms[1]);
    tb.push_back(ms[2]);
    cb.push_back(ms[3]);
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (cudaEvent_t e : ev) (void)cudaEventDestroy(e);
  (void)cudaStreamDestroy(stream);
  if (failures.count) throw Error(Code::invalid_param, failures.first);
  finish(res.forward, tf, cf);
  finish(res.backward, tb, cb);
  return res;
}

}  // namespace moeperm::bench
