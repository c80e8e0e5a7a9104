#include <cstdio>
#include <ostream>

#include "bench.hpp"
#include "host_info.hpp"

namespace moeperm::bench {
namespace {

std::string describe(const problem_model::ProblemSpec &s) {
  char buf[160];
  if (s.drop_and_pad)
    std::snprintf(buf, sizeof buf, "T=%lld H=%lld E=%lld C=%lld %s drop-and-pad", (long long)s.T,
                  (long long)s.H, (long long)s.E, (long long)s.capacity, to_string(s.dtype));
  else
    std::snprintf(buf, sizeof buf, "T=%lld H=%lld E=%lld K=%lld %s drop-less", (long long)s.T,
                  (long long)s.H, (long long)s.E, (long long)s.K, to_string(s.dtype));
  return buf;
}

void row(std::ostream &out, const CaseResult &r, const char *op, const OpResult &o) {
  if (!o.measured) return;
  char buf[320];
  char ref[48] = "-";
  if (o.ref_ms >= 0)
    std::snprintf(ref, sizeof ref, "%.0f ms (%.1fx)", o.ref_ms, o.ref_ms / o.median_ms);
  else if (o.bit_differences >= 0)  // cuda: the check against the CPU backend instead
    std::snprintf(ref, sizeof ref, "%s: %d differ", o.bit_differences == 0 ? "bitwise" : "BITS",
                  o.bit_differences);
  char traffic[24] = "-";
  if (o.traffic_ms > 0) std::snprintf(traffic, sizeof traffic, "%.2fx", o.median_ms / o.traffic_ms);
  char per_call[24] = "-";
  if (o.per_call_ms >= 0)
    std::snprintf(per_call, sizeof per_call, "%+.1f%%", 100.0 * (o.per_call_ms / o.median_ms - 1));
  std::snprintf(
      buf, sizeof buf,
      "| %-14s | %-44s | %2d | %-15s | %8.1f | %9.2f | %6.2f | %9.2f | %5.2fx | %10s | %9s | %-17s "
      "|\n",
      r.c.name.c_str(), describe(r.c.spec).c_str(), r.c.threads, op, o.bytes / 1e6, o.median_ms,
      o.gbps, o.memcpy_ms, o.ratio, traffic, per_call, ref);
  out << buf;
}

void json_op(std::ostream &out, const OpResult &o) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "{\"median_ms\": %.4f, \"min_ms\": %.4f, \"bytes\": %.0f, \"gbps\": %.3f, "
                "\"memcpy_ms\": %.4f, \"ratio_to_memcpy\": %.4f, \"reference_ms\": %s, "
                "\"traffic_ms\": %s, \"plan_per_call_ms\": %s, \"bit_differences_vs_cpu\": %s}",
                o.median_ms, o.min_ms, o.bytes, o.gbps, o.memcpy_ms, o.ratio,
                o.ref_ms >= 0 ? std::to_string(o.ref_ms).c_str() : "null",
                o.traffic_ms > 0 ? std::to_string(o.traffic_ms).c_str() : "null",
                o.per_call_ms >= 0 ? std::to_string(o.per_call_ms).c_str() : "null",
                o.bit_differences >= 0 ? std::to_string(o.bit_differences).c_str() : "null");
  out << buf;
}

}  // namespace

void print_table(std::ostream &out, const std::vector<CaseResult> &results) {
  out << "| case           | problem                                      | th | op              "
         "|    MB/call | median ms |   GB/s | memcpy ms | vs memcpy | vs traffic | plan/call | "
         "reference (1 thread) |\n"
         "|----------------|----------------------------------------------|----|-----------------"
         "|-----------:|----------:|-------:|----------:|----------:|-----------:|----------:|"
         "----------------------|\n";
  for (const CaseResult &r : results) {
    row(out, r, "permute", r.forward);
    row(out, r, "permute Grad", r.backward);
    row(out, r, "unpermute", r.unpermute);
    row(out, r, "unpermute Grad", r.unpermute_grad);
    row(out, r, "ragged permute", r.ragged_permute);
    row(out, r, "ragged perm Grd", r.ragged_permute_grad);
    row(out, r, "ragged unperm", r.ragged_unpermute);
    row(out, r, "ragged unp Grad", r.ragged_unpermute_grad);
    row(out, r, "sort chunks", r.sort_chunks);
    row(out, r, "sort chunks Grd", r.sort_chunks_grad);
  }
}

void write_json(std::ostream &out, const std::vector<CaseResult> &results, const Options &o) {
  out << "{\n  \"host\": ";
  write_json(out, host_info());
  out << ",\n  \"runs\": " << o.runs << ", \"warmup\": " << o.warmup << ",\n  \"cases\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const CaseResult &r = results[i];
    const problem_model::ProblemSpec &s = r.c.spec;
    out << "    {\"name\": \"" << r.c.name << "\", \"T\": " << s.T << ", \"H\": " << s.H
        << ", \"E\": " << s.E << ", \"K\": " << (s.drop_and_pad ? 0 : s.K)
        << ", \"capacity\": " << (s.drop_and_pad ? s.capacity : 0)
        << ", \"drop_and_pad\": " << (s.drop_and_pad ? "true" : "false") << ", \"dtype\": \""
        << to_string(s.dtype) << "\", \"threads\": " << r.c.threads << ", \"plan\": \"" << r.plan
        << "\",\n     \"forward\": ";
    json_op(out, r.forward);
    out << ",\n     \"backward\": ";
    json_op(out, r.backward);
    // The other operators, where the device's backend has them.
    for (const auto &[key, op] :
         {std::pair{"unpermute", &r.unpermute}, std::pair{"unpermute_grad", &r.unpermute_grad},
          std::pair{"ragged_permute", &r.ragged_permute},
          std::pair{"ragged_permute_grad", &r.ragged_permute_grad},
          std::pair{"ragged_unpermute", &r.ragged_unpermute},
          std::pair{"ragged_unpermute_grad", &r.ragged_unpermute_grad},
          std::pair{"sort_chunks", &r.sort_chunks},
          std::pair{"sort_chunks_grad", &r.sort_chunks_grad}})
      if (op->measured) {
        out << ",\n     \"" << key << "\": ";
        json_op(out, *op);
      }
    out << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
}

}  // namespace moeperm::bench
