// What `moeperm bench` says about the machine it measured, so that tables from different
// hosts can be told apart (issue 15): the CPU model, its caches as cpu0 sees them, the
// hardware threads, the CPU backend's kernel variant (the instruction set it chose), and the
// pages its buffers had.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace moeperm::bench {

struct HostInfo {
  std::string cpu_model;  // /proc/cpuinfo's "model name" ("" where there is none)
  // cpu0's data / unified caches from sysfs (0: not reported). L3 is the slice cpu0 shares.
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  unsigned hardware_threads = 0;
  std::string cpu_variant;  // the CPU backend's choice at plan time (MOEPERM_CPU_ISA forces one)
  // The kernel's transparent-huge-page mode (the bracketed word of sysfs's
  // transparent_hugepage/enabled: always, madvise or never; "" where absent), and whether the
  // bench advised huge pages for its buffers (--huge-pages).
  std::string thp_mode;
  bool huge_page_advice = false;
};

HostInfo host_info();
std::string cpu_variant();  // the variant a CPU plan takes now (MOEPERM_CPU_ISA included)
std::string describe(const HostInfo &h);                // one line for the table's header
void write_json(std::ostream &out, const HostInfo &h);  // a JSON object

}  // namespace moeperm::bench
