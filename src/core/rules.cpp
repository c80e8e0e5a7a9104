#include "core/rules.hpp"

#include <vector>

#include "core/messages.hpp"

namespace moeperm::detail {

int64_t size_of(const Sizes &z, Sym s) {
  switch (s) {
    case Sym::T: return z.tokens;
    case Sym::H: return z.hidden;
    case Sym::E: return z.experts;
    case Sym::R: return z.rows;
    case Sym::K: return z.top_k;
    case Sym::C: return z.capacity;
    case Sym::S: return z.chunks;
    case Sym::free: break;
  }
  return -1;
}

const char *ref_name(const OpDesc &op, int8_t ref) {
  if (is_int_array_ref(ref)) return op.int_arrays[static_cast<size_t>(int_array_of(ref))].name;
  return op.operands[static_cast<size_t>(ref)].name;
}

bool RuleScope::skipped(int8_t ref) const {
  return inputs_only && ref >= 0 && op.operands[static_cast<size_t>(ref)].dir == Dir::out;
}

namespace {

std::string mode_text(const OpDesc &op, Mode mode) {
  if (mode == Mode::any) return "";
  return cat(" (", op.mode_name, "=", mode == Mode::drop_and_pad ? "true" : "false", ")");
}

}  // namespace

Status check_presence(const RuleScope &s) {
  for (size_t i = 0; i < s.op.int_arrays.size(); ++i)
    if (s.op.int_arrays[i].required && !s.set.given(int_array_ref(static_cast<int>(i))))
      return null_argument(s.op.api, s.op.int_arrays[i].name);
  for (const OneOfRule &r : s.op.one_of)
    if (!s.set.given(r.a) && !s.set.given(r.b) && !s.skipped(r.a) && !s.skipped(r.b))
      return null_arguments_both(s.op.api, ref_name(s.op, r.a), ref_name(s.op, r.b));
  for (const PresenceRule &r : s.op.presence) {
    if (!applies(r.mode, s.set.drop_and_pad) || !s.set.given(r.when_given)) continue;
    if (r.and_given >= 0 && !s.set.given(r.and_given)) continue;
    if (s.set.given(r.needed) || s.skipped(r.needed)) continue;
    const std::string because = r.and_given >= 0 ? cat(ref_name(s.op, r.when_given), " and ",
                                                       ref_name(s.op, r.and_given), " are given")
                                                 : cat(ref_name(s.op, r.when_given), " is given");
    return null_argument_because(s.op.api, ref_name(s.op, r.needed),
                                 because + mode_text(s.op, r.mode));
  }
  return Status::success();
}

Status check_int_array_length(const OpDesc &op, const OperandSet &set, int8_t ref) {
  const IntArrayDesc &d = op.int_arrays[static_cast<size_t>(int_array_of(ref))];
  const std::span<const int64_t> v = set.int_array(ref);
  if (static_cast<int64_t>(v.size()) == d.length) return Status::success();
  return fail(op.rank_status, cat(op.api, ": ", d.name, " must have ", int64_t{d.length},
                                  " values, got ", v.size(), " ", shape_string(v)));
}

Status check_int_array_values(const OpDesc &op, const OperandSet &set, int8_t ref, const Sizes &z) {
  const IntArrayDesc &d = op.int_arrays[static_cast<size_t>(int_array_of(ref))];
  const std::span<const int64_t> v = set.int_array(ref);
  std::vector<int64_t> want(v.begin(), v.end());
  bool ok = true;
  for (size_t k = 0; k < v.size() && k < d.values.size(); ++k) {
    if (d.values[k] == Sym::free) continue;
    want[k] = size_of(z, d.values[k]);
    ok = ok && v[k] == want[k];
  }
  if (ok) return Status::success();
  return inconsistent(op.api, cat(d.name, " is ", shape_string(v), ", expected ",
                                  shape_string(want), *d.why ? " " : "", d.why));
}

Status check_limits(const OpDesc &op, const OperandSet &set, const Sizes &z) {
  for (const LimitRule &r : op.limits) {
    if (!applies(r.mode, set.drop_and_pad) || (r.only_with >= 0 && !set.given(r.only_with)))
      continue;
    const int64_t value = size_of(z, r.value);
    const bool by_size = r.max_sym != Sym::free;
    const int64_t max = by_size ? size_of(z, r.max_sym) : r.max;
    if (value <= max) continue;
    const std::string bound =
        by_size ? cat(r.max_label, " = ", max) : cat("the supported maximum of ", max);
    const std::string mode =
        r.mode == Mode::any
            ? std::string()
            : cat(" for ", op.mode_name, "=", r.mode == Mode::drop_and_pad ? "true" : "false");
    return fail(r.status, cat(op.api, ": ", r.label, " = ", value, " exceeds ", bound, mode,
                              *r.why ? cat(" (", r.why, ")") : std::string()));
  }
  return Status::success();
}

}  // namespace moeperm::detail
