// The random problems of the ragged pair's conformance suites (docs/ragged.md) and their
// oracle: the routed pairs listed and stably sorted by expert (tokens ascend inside an
// expert), then laid into rows per mode. Maps of every dtype (int32 values that are
// multiples of 256: a one-byte read would miss them), tokens with no expert and with all of
// them, R below, at and above the routed pairs, capacities that drop and that pad, probs of
// a dtype other than the tokens', three layouts.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "backend_matrix.hpp"
#include "fp_reference.hpp"
#include "poisoned_buffer.hpp"

namespace moeperm::testing::ragged {

enum class Rows { fewer, exact, more };  // drop-less R against the routed pairs

struct Case {
  std::string name;
  bool drop_and_pad = false;
  int64_t T = 0, E = 0, H = 0;
  Rows rows = Rows::exact;  // drop-less
  int64_t C = 0;            // drop-and-pad capacity
  DType vdt = DType::f32, mdt = DType::boolean;
  std::optional<DType> pdt;
  Lay lay = Lay::contiguous;
};

inline void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

struct Pair {
  int64_t t = -1, e = -1;
};

struct Inputs {
  Buf x, map, probs, y;    // y: the unpermute's input [R, H]
  std::vector<Pair> rows;  // the oracle's row -> pair (t = -1: empty)
  int64_t R = 0;
};

inline bool routed(const Buf &map, int64_t t, int64_t e) { return map.bits(t, e) != 0; }

// Multiples of 1/256 in [-3.9, 3.9], exact in every float dtype (encoded once per dtype).
inline uint32_t value_bits(DType dt, std::mt19937 &rng) {
  static const auto table = [] {
    std::array<std::array<uint32_t, 2001>, 3> t{};
    const DType dts[] = {DType::bf16, DType::f16, DType::f32};
    for (size_t d = 0; d < 3; ++d)
      for (size_t i = 0; i < 2001; ++i)
        t[d][i] = encode(dts[d], (static_cast<int>(i) - 1000) / 256.0);
    return t;
  }();
  const size_t d = dt == DType::bf16 ? 0 : dt == DType::f16 ? 1 : 2;
  return table[d][rng() % 2001];
}

inline Inputs make_inputs(const Case &c, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  in.x = Buf(c.vdt, {c.T, c.H}, c.lay);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t h = 0; h < c.H; ++h) in.x.set_bits(t, h, value_bits(c.vdt, rng));
  in.map = Buf(c.mdt, {c.T, c.E}, c.lay);
  for (int64_t t = 0; t < c.T; ++t) {
    const uint32_t kind = rng() % 8;  // no expert, every expert, or a random subset
    for (int64_t e = 0; e < c.E; ++e) {
      const bool on = kind == 0 ? false : kind == 1 ? true : rng() % 3 == 0;
      const uint32_t v = c.mdt == DType::i32       ? 256u * (1 + rng() % 4) + (rng() % 2) * 7
                         : c.mdt == DType::boolean ? 1u
                                                   : 1 + rng() % 100;
      in.map.set_bits(t, e, on ? v : 0);
    }
  }
  if (c.pdt) {
    in.probs = Buf(*c.pdt, {c.T, c.E}, c.lay);
    for (int64_t t = 0; t < c.T; ++t)
      for (int64_t e = 0; e < c.E; ++e)
        in.probs.set_bits(t, e, encode(*c.pdt, rng() % 9 == 0 ? 0.0 : (rng() % 1000) / 997.0));
  }
  // The oracle's rows: the pairs in expert-major order, tokens ascending inside an expert.
  std::vector<Pair> pairs;
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t e = 0; e < c.E; ++e)
      if (routed(in.map, t, e)) pairs.push_back({t, e});
  std::stable_sort(pairs.begin(), pairs.end(), [](Pair a, Pair b) { return a.e < b.e; });
  const auto n = static_cast<int64_t>(pairs.size());
  if (!c.drop_and_pad) {
    in.R = c.rows == Rows::exact ? n : c.rows == Rows::fewer ? n * 2 / 3 : n + 37;
    in.rows.assign(static_cast<size_t>(in.R), Pair{});
    for (int64_t r = 0; r < std::min(n, in.R); ++r) in.rows[static_cast<size_t>(r)] = pairs[r];
  } else {
    in.R = c.E * c.C;
    in.rows.assign(static_cast<size_t>(in.R), Pair{});
    std::vector<int64_t> taken(static_cast<size_t>(c.E), 0);
    for (const Pair &p : pairs)
      if (int64_t &k = taken[static_cast<size_t>(p.e)]; k < c.C)
        in.rows[static_cast<size_t>(p.e * c.C + k++)] = p;
  }
  in.y = Buf(c.vdt, {in.R, c.H}, c.lay);
  for (int64_t r = 0; r < in.R; ++r)
    for (int64_t h = 0; h < c.H; ++h) in.y.set_bits(r, h, value_bits(c.vdt, rng));
  return in;
}

// The oracle's index: row -> token, -1 for empty rows.
inline Buf oracle_index(const Case &c, const Inputs &in) {
  Buf s(DType::i32, {in.R}, c.lay);
  for (int64_t r = 0; r < in.R; ++r)
    s.set_bits(r, 0, static_cast<uint32_t>(in.rows[static_cast<size_t>(r)].t));
  return s;
}

inline std::vector<Case> cases(bool contiguous) {
  struct Combo {
    const char *name;
    DType v;
    std::optional<DType> p;
    DType m;
  };
  // Probs of any float dtype with any token dtype; maps of every dtype.
  const Combo combos[] = {{"bf16_bool", DType::bf16, std::nullopt, DType::boolean},
                          {"bf16_f32p_i32", DType::bf16, DType::f32, DType::i32},
                          {"f16_bf16p_u8", DType::f16, DType::bf16, DType::u8},
                          {"f32_f16p_i8", DType::f32, DType::f16, DType::i8},
                          {"f16_f32p_bool", DType::f16, DType::f32, DType::boolean}};
  std::vector<Case> out;
  for (const Combo &k : combos)
    for (Lay lay : {Lay::contiguous, Lay::padded, Lay::strided}) {
      if ((lay == Lay::contiguous) != contiguous) continue;
      const bool big = lay == Lay::contiguous;
      const std::string ln = big ? "contig" : lay == Lay::padded ? "padded" : "strided";
      Case base{.name = "",
                .T = big ? 613 : 67,
                .E = big ? 9 : 5,
                .H = big ? 1061 : 45,
                .vdt = k.v,
                .mdt = k.m,
                .pdt = k.p,
                .lay = lay};
      for (Rows rows : {Rows::fewer, Rows::exact, Rows::more}) {
        Case c = base;
        c.rows = rows;
        c.name = std::string("dropless_") + k.name + "_" + ln +
                 (rows == Rows::fewer   ? "_fewer"
                  : rows == Rows::exact ? "_exact"
                                        : "_more");
        out.push_back(c);
      }
      // Capacities that drop most experts' tokens, and that pad every expert.
      for (int64_t C : {base.T / 9, base.T / 2 + 1}) {
        Case c = base;
        c.drop_and_pad = true;
        c.C = C;
        c.name = std::string("dropandpad_") + k.name + "_" + ln + "_c" + std::to_string(C);
        out.push_back(c);
      }
    }
  return out;
}

// An index no permute makes: each row a random token (so a token's rows, and one expert's
// rows of a token, repeat) or -1; drop-less, the rows past the routed pairs stay -1 (with
// probs they have no expert to weigh them).
inline Buf random_index(const Case &c, const Inputs &in, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t pairs = 0;
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t e = 0; e < c.E; ++e) pairs += routed(in.map, t, e);
  Buf s(DType::i32, {in.R}, c.lay);
  for (int64_t r = 0; r < in.R; ++r) {
    const bool hole = rng() % 5 == 0 || (!c.drop_and_pad && r >= pairs) || c.T == 0;
    s.set_bits(r, 0, hole ? ~0u : static_cast<uint32_t>(rng() % static_cast<uint32_t>(c.T)));
  }
  return s;
}

// Both layouts' cases: the device suites run each once.
inline std::vector<Case> all_cases() {
  std::vector<Case> out = cases(true);
  for (const Case &c : cases(false)) out.push_back(c);
  return out;
}

// The device backends' configurations (their test names end in "_<backend>": label gpu).
inline std::vector<BackendConfig> device_configs() {
  std::vector<BackendConfig> out;
  for (const BackendConfig &c : backend_configs(Matrix::one))
    if (c.info.device) out.push_back(c);
  return out;
}

inline std::string CaseConfigName(
    const ::testing::TestParamInfo<std::tuple<Case, BackendConfig>> &info) {
  return std::get<0>(info.param).name + "_" + config_name(std::get<1>(info.param));
}

}  // namespace moeperm::testing::ragged
