#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "bench.hpp"

namespace moeperm::bench {
namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// The ceiling: a multi-threaded memcpy that moves `bytes` (reads bytes/2, writes bytes/2),
// each thread copying one contiguous chunk with the C library's memcpy.
class MemcpyBaseline {
 public:
  explicit MemcpyBaseline(double bytes)
      : n_(static_cast<size_t>(bytes / 2)), src_(n_, std::byte{1}), dst_(n_, std::byte{2}) {}
  double time_ms(int threads) {
    const double t0 = now_ms();
    const size_t chunk = (n_ + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < threads; ++i) {
      const size_t begin = std::min(n_, chunk * static_cast<size_t>(i));
      const size_t end = std::min(n_, begin + chunk);
      std::memcpy(dst_.data() + begin, src_.data() + begin, end - begin);
    }
    return now_ms() - t0;
  }

 private:
  size_t n_;
  std::vector<std::byte> src_, dst_;
};

template <class Fn>
double time_ms(Fn &&fn) {
  const double t0 = now_ms();
  fn();
  return now_ms() - t0;
}

}  // namespace

CaseResult run_case(const Case &c, const Options &o) {
  if (o.device == "cuda") return run_case_cuda(c, o);
  CaseResult res;
  res.c = c;
  set_num_threads(c.threads);
  problem_model::Problem p = problem_model::make_problem(c.spec);
  const Plan fwd = plan_permute(p.permute_desc(), {Backend::cpu});
  const Plan bwd = plan_permute_grad(p.grad_desc(), {Backend::cpu});
  res.plan = bwd.to_string();
  std::vector<std::byte> ws_f(fwd.workspace_bytes()), ws_b(bwd.workspace_bytes());
  res.forward.bytes = static_cast<double>(problem_model::permute_bytes(c.spec));
  res.backward.bytes = static_cast<double>(problem_model::permute_grad_bytes(c.spec));
  MemcpyBaseline copy_f(res.forward.bytes), copy_b(res.backward.bytes);

  const PermuteData fd = p.permute_data();
  const PermuteGradData bd = p.grad_data();
  for (int i = 0; i < o.warmup; ++i) {
    run(fwd, fd, ws_f);
    run(bwd, bd, ws_b);
    copy_f.time_ms(c.threads);
    copy_b.time_ms(c.threads);
  }
  // Interleaved, so that the operator and its ceiling see the same machine state.
  std::vector<double> tf, tb, cf, cb;
  for (int i = 0; i < o.runs; ++i) {
    tf.push_back(time_ms([&] { run(fwd, fd, ws_f); }));
    cf.push_back(copy_f.time_ms(c.threads));
    tb.push_back(time_ms([&] { run(bwd, bd, ws_b); }));
    cb.push_back(copy_b.time_ms(c.threads));
  }
  finish(res.forward, tf, cf);
  finish(res.backward, tb, cb);

  if (c.with_reference && o.ref_runs > 0) {
    // The reference is single-threaded by construction; S comes from the forward above.
    const Plan rf = plan_permute(p.permute_desc(), {Backend::reference});
    const Plan rb = plan_permute_grad(p.grad_desc(), {Backend::reference});
    std::vector<double> rtf, rtb;
    for (int i = 0; i < o.ref_runs; ++i) {
      rtf.push_back(time_ms([&] { run(rf, fd, {}); }));
      rtb.push_back(time_ms([&] { run(rb, bd, {}); }));
    }
    res.forward.ref_ms = median(rtf);
    res.backward.ref_ms = median(rtb);
  }
  set_num_threads(0);
  return res;
}

}  // namespace moeperm::bench
