// `moeperm bench`: run the benchmark suites (bench/) and print the table, optionally JSON.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench.hpp"
#include "cli_args.hpp"
#include "commands.hpp"
#include "host_info.hpp"

namespace moeperm::cli {

int bench_command(std::span<const std::string_view> args) {
  BenchCommandOptions o;
  try {
    o = parse_bench_args(args);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "moeperm bench: %s\n", e.what());
    return kExitUsage;
  }
  if (o.help) {
    std::fputs(kBenchHelp, stdout);
    return kExitOk;
  }
  problem_model::set_huge_page_advice(o.bench.huge_pages);  // before any buffer exists
  std::vector<bench::CaseResult> results;
  try {
    for (const bench::Case &c : bench::standard_cases(o.bench)) {
      std::fprintf(stderr, "moeperm bench: %s ...\n", c.name.c_str());
      results.push_back(bench::run_case(c, o.bench));
    }
  } catch (const Error &e) {
    std::fprintf(stderr, "moeperm bench: %s (status %d)\n", e.what(), static_cast<int>(e.code()));
    return kExitFailure;
  }
  std::printf("host: %s\n", bench::describe(bench::host_info()).c_str());
  std::printf("plans:\n");
  for (const bench::CaseResult &r : results)
    std::printf("  %-14s %s\n", r.c.name.c_str(), r.plan.c_str());
  std::printf(
      "\nmedian of %d runs after %d warm-up; memcpy = the faster of two same-run multi-threaded "
      "copies moving the same bytes (the C library's memcpy, a streaming copy)\n\n",
      o.bench.runs, o.bench.warmup);
  bench::print_table(std::cout, results);
  if (!o.json_path.empty()) {
    if (o.json_path == "-") {
      bench::write_json(std::cout, results, o.bench);
    } else {
      std::ofstream out(o.json_path);
      bench::write_json(out, results, o.bench);
      if (!out) {
        std::fprintf(stderr, "moeperm bench: cannot write %s\n", o.json_path.c_str());
        return kExitFailure;
      }
    }
  }
  return kExitOk;
}

}  // namespace moeperm::cli
