// Flag parsing for `moeperm run`. Every flag takes the forms `--name value` and
// `--name=value`; short aliases (-T, -H, -E, -K, -C) take `-T value`. Values are checked
// here, before anything is allocated, so a typo costs nothing.
#include "cli_args.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace moeperm::cli {
namespace {

// Upper bounds keep every derived size (R, R*H, byte counts) far from int64 overflow.
constexpr int64_t kMaxTokens = int64_t{1} << 24;
constexpr int64_t kMaxHidden = int64_t{1} << 20;
constexpr int64_t kMaxExperts = int64_t{1} << 16;
constexpr int64_t kMaxTopK = 512;  // CANN's limit for drop-less (SPEC §5.5)
constexpr int64_t kMaxCapacity = int64_t{1} << 24;

[[noreturn]] void fail(const std::string &message) { throw UsageError(message); }

template <class Int>
Int parse_integer(std::string_view flag, std::string_view text, Int lo, Int hi) {
  Int value{};
  const char *end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end)
    fail(std::string(flag) + " expects an integer, got '" + std::string(text) + "'");
  if (ec == std::errc::result_out_of_range || value < lo || value > hi)
    fail(std::string(flag) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "], got " + std::string(text));
  return value;
}

DType parse_value_dtype(std::string_view flag, std::string_view text) {
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  if (text == "fp16" || text == "float16" || text == "half") return DType::f16;
  if (text == "fp32" || text == "float32" || text == "float") return DType::f32;
  fail(std::string(flag) + " must be bf16, fp16 or fp32 (or bfloat16, float16, float32), got '" +
       std::string(text) + "'");
}

DType parse_map_dtype(std::string_view text) {
  if (text == "bool") return DType::boolean;
  if (text == "int8") return DType::i8;
  fail("--map-dtype must be bool or int8, got '" + std::string(text) + "'");
}

Backend parse_backend(std::string_view text) {
  if (text == "cpu") return Backend::cpu;
  if (text == "reference" || text == "ref") return Backend::reference;
  if (text == "auto") return Backend::automatic;
  fail("--backend must be cpu, reference or auto, got '" + std::string(text) + "'");
}

// Walks the argument list; `value()` consumes the value of the current flag.
class Cursor {
 public:
  explicit Cursor(std::span<const std::string_view> args) : args_(args) {}

  bool next() {
    if (i_ >= args_.size()) return false;
    std::string_view a = args_[i_++];
    inline_value_.reset();
    if (a.starts_with("--")) {
      if (const size_t eq = a.find('='); eq != std::string_view::npos) {
        inline_value_ = a.substr(eq + 1);
        a = a.substr(0, eq);
      }
    }
    flag_ = a;
    return true;
  }
  std::string_view flag() const { return flag_; }
  std::string_view value() {
    if (inline_value_) return *std::exchange(inline_value_, std::nullopt);
    if (i_ >= args_.size()) fail(std::string(flag_) + " needs a value");
    return args_[i_++];
  }
  // For flags without a value: `--drop-and-pad=yes` is a mistake, not a silent yes.
  void no_value() {
    if (inline_value_) fail(std::string(flag_) + " takes no value");
  }

 private:
  std::span<const std::string_view> args_;
  size_t i_ = 0;
  std::string_view flag_;
  std::optional<std::string_view> inline_value_;
};

PathOp parse_op(std::string_view text) {
  for (PathOp op : kPathOps)
    if (text == op_flag_name(op)) return op;
  fail("--op must be permute, unpermute, unpermute-grad or permute-grad, got '" +
       std::string(text) + "'");
}

// Cross-flag rules, once every flag is known.
void check_consistency(const RunOptions &o, bool capacity_given, bool probs_dtype_given) {
  const problem_model::ProblemSpec &s = o.spec;
  if (s.K > s.E)
    fail("--topk (" + std::to_string(s.K) + ") must not exceed --experts (" + std::to_string(s.E) +
         ")");
  if (capacity_given && !s.drop_and_pad)
    fail("--capacity applies to drop-and-pad mode only: add --drop-and-pad");
  if (s.ragged && s.drop_and_pad)
    fail("--ragged applies to drop-less mode only (drop-and-pad pads every expert to capacity)");
  if (probs_dtype_given && s.probs_dtype != s.dtype &&
      !(s.dtype == DType::bf16 && s.probs_dtype == DType::f32))
    fail("--probs-dtype must equal --dtype, or be fp32 with bf16 tokens; got " +
         std::string(dtype_name(s.probs_dtype)) + " with " + std::string(dtype_name(s.dtype)));
  // The library's own rules on the inputs and attributes, R within the int32 range of
  // sortedIndices among them: infer_outputs (behind rows()) reports them as planning would.
  try {
    (void)s.rows();
  } catch (const Error &e) {
    fail(e.what());
  }
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::f32: return "fp32";
    case DType::boolean: return "bool";
    case DType::i8: return "int8";
    case DType::i32: return "int32";
    default: return to_string(dtype);
  }
}

std::string_view api_name(PathOp op) {
  switch (op) {
    case PathOp::permute: return "aclnnMoeTokenPermuteWithRoutingMap";
    case PathOp::unpermute: return "aclnnMoeTokenUnpermuteWithRoutingMap";
    case PathOp::unpermute_grad: return "aclnnMoeTokenUnpermuteWithRoutingMapGrad";
    case PathOp::permute_grad: return "aclnnMoeTokenPermuteWithRoutingMapGrad";
  }
  return "?";
}

std::string_view op_flag_name(PathOp op) {
  switch (op) {
    case PathOp::permute: return "permute";
    case PathOp::unpermute: return "unpermute";
    case PathOp::unpermute_grad: return "unpermute-grad";
    case PathOp::permute_grad: return "permute-grad";
  }
  return "?";
}

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::cpu: return "cpu";
    case Backend::reference: return "reference";
    case Backend::automatic: return "auto";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

RunOptions parse_run_args(std::span<const std::string_view> args) {
  RunOptions o;
  problem_model::ProblemSpec &s = o.spec;
  bool capacity_given = false, probs_dtype_given = false;
  Cursor c(args);
  while (c.next()) {
    const std::string_view f = c.flag();
    if (f == "--help" || f == "-h") {
      c.no_value();
      o.help = true;
    } else if (f == "--tokens" || f == "-T") {
      s.T = parse_integer<int64_t>(f, c.value(), 1, kMaxTokens);
    } else if (f == "--hidden" || f == "-H") {
      s.H = parse_integer<int64_t>(f, c.value(), 1, kMaxHidden);
    } else if (f == "--experts" || f == "-E") {
      s.E = parse_integer<int64_t>(f, c.value(), 1, kMaxExperts);
    } else if (f == "--topk" || f == "-K") {
      s.K = parse_integer<int64_t>(f, c.value(), 1, kMaxTopK);
    } else if (f == "--capacity" || f == "-C") {
      s.capacity = parse_integer<int64_t>(f, c.value(), 1, kMaxCapacity);
      capacity_given = true;
    } else if (f == "--drop-and-pad") {
      c.no_value();
      s.drop_and_pad = true;
    } else if (f == "--dtype") {
      s.dtype = parse_value_dtype(f, c.value());
    } else if (f == "--probs-dtype") {
      s.probs_dtype = parse_value_dtype(f, c.value());
      probs_dtype_given = true;
    } else if (f == "--no-probs") {
      c.no_value();
      s.with_probs = false;
    } else if (f == "--map-dtype") {
      s.map_dtype = parse_map_dtype(c.value());
    } else if (f == "--ragged") {
      c.no_value();
      s.ragged = true;
    } else if (f == "--seed") {
      s.seed = parse_integer<uint64_t>(f, c.value(), 0, std::numeric_limits<uint64_t>::max());
    } else if (f == "--threads") {
      o.threads = parse_integer<int>(f, c.value(), 1, 1024);
    } else if (f == "--backend") {
      o.backend = parse_backend(c.value());
    } else if (f == "--op") {
      o.op = parse_op(c.value());
    } else if (f == "--repeat") {
      o.repeat = parse_integer<int>(f, c.value(), 1, 10000);
    } else if (f.starts_with("-")) {
      fail("unknown flag '" + std::string(f) + "' (see moeperm run --help)");
    } else {
      fail("unexpected argument '" + std::string(f) + "' (see moeperm run --help)");
    }
  }
  if (!probs_dtype_given) s.probs_dtype = s.dtype;  // probs follow the tokens by default
  if (!o.help) check_consistency(o, capacity_given, probs_dtype_given);
  return o;
}

BenchCommandOptions parse_bench_args(std::span<const std::string_view> args) {
  BenchCommandOptions o;
  Cursor c(args);
  while (c.next()) {
    const std::string_view f = c.flag();
    if (f == "--help" || f == "-h") {
      c.no_value();
      o.help = true;
    } else if (f == "--suite") {
      const std::string_view v = c.value();
      if (v != "named" && v != "sweep" && v != "threads" && v != "smoke" && v != "isa")
        fail("--suite must be named, sweep, threads, smoke or isa, got '" + std::string(v) + "'");
      o.bench.suites.emplace_back(v);
    } else if (f == "--runs") {
      o.bench.runs = parse_integer<int>(f, c.value(), 10, 100000);
    } else if (f == "--warmup") {
      o.bench.warmup = parse_integer<int>(f, c.value(), 0, 1000);
    } else if (f == "--reference-runs") {
      o.bench.ref_runs = parse_integer<int>(f, c.value(), 0, 1000);
    } else if (f == "--threads") {
      o.bench.max_threads = parse_integer<int>(f, c.value(), 1, 1024);
    } else if (f == "--json") {
      o.json_path = std::string(c.value());
    } else if (f == "--huge-pages") {
      c.no_value();
      o.bench.huge_pages = true;
    } else if (f == "--device") {
      const std::string_view v = c.value();
      if (v != "cpu" && v != "cuda")
        fail("--device must be cpu or cuda, got '" + std::string(v) + "'");
      o.bench.device = std::string(v);
    } else if (f.starts_with("-")) {
      fail("unknown flag '" + std::string(f) + "' (see moeperm bench --help)");
    } else {
      fail("unexpected argument '" + std::string(f) + "' (see moeperm bench --help)");
    }
  }
  return o;
}

}  // namespace moeperm::cli
