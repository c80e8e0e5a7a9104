// The help texts of the moeperm command (kept apart so the wording is easy to review).
#include "commands.hpp"

namespace moeperm::cli {

const char *const kMainHelp =
    R"(moeperm: CANN's MoE token permutation operators (permute, unpermute and their Grads)

usage: moeperm <command> [flags]

commands:
  run        run one MoE layer's token path (aclnnMoeTokenPermuteWithRoutingMap ->
             aclnnMoeTokenUnpermuteWithRoutingMap -> its Grad -> the permute Grad) through
             the CANN C API on a random problem, time each operator, and verify every output
             bitwise against the reference (--op: one operator)
  bench      measure the operators on the SPEC §7 shapes: median time, bytes moved,
             GB/s and the ratio to a same-run multi-threaded copy of the same bytes
  help [run|bench]  print this help, or the help of a command

flags:
  -h, --help  print this help
  --version   print the version

`moeperm run --help` lists the problem flags. Exit status: 0 success, 1 operator error or
verification failure, 2 bad command line.
)";

const char *const kRunHelp =
    R"(usage: moeperm run [flags]

Generates a random MoE problem and runs the token path of one layer through the CANN C API
exactly as a CANN program would (aclInit, aclrtSetDevice, aclrtCreateStream, aclrtMalloc +
aclrtMemcpy, aclCreateTensor, aclCreateIntArray, GetWorkspaceSize + execute,
aclrtSynchronizeStream), timing each phase:
  1. aclnnMoeTokenPermuteWithRoutingMap        tokens -> expert-major rows
  2. aclnnMoeTokenUnpermuteWithRoutingMap      rows -> tokens, weighted by the probs (the
                                               experts are the identity)
  3. aclnnMoeTokenUnpermuteWithRoutingMapGrad  the layer's output gradient -> row gradients
                                               (and the probs gradient), from 2.'s outIndex
                                               and permuteTokenId
  4. aclnnMoeTokenPermuteWithRoutingMapGrad    3.'s row gradients -> token gradients
Each operator is then recomputed with the reference backend through the C++ API on the very
inputs it consumed, and every element of every output is compared bit for bit: the full
tensors, not a sample. The sums have a fixed order (SPEC §4, SPEC-unpermute U3), so any
difference is a bug. One line per operator reports its times, traffic and verdict.

The default is a DeepSeek-V3-like layer (SPEC §7): 4096 tokens, hidden 7168, 256 experts,
top-8, bf16, drop-less, with probs. Its permuted rows alone are 470 MB; the run needs
about 3 GB of memory and takes about 15 s on 2 cores, most of it generating the inputs
and verifying.

problem:
  -T, --tokens N       tokens, T (default 4096; 1..16777216)
  -H, --hidden N       hidden size, H (default 7168; 1..1048576)
  -E, --experts N      experts, E (default 256; 1..65536)
  -K, --topk N         experts per token, K (default 8; 1..512, at most E)
  -C, --capacity N     rows per expert in drop-and-pad mode, C (default 16; needs
                       --drop-and-pad)
  --drop-and-pad       drop-and-pad mode: R = E*C rows (default: drop-less, R = T*K)
  --ragged             drop-less only: each token picks a random 0..K experts, so some
                       sortedIndices slots hold -1
  --dtype T            tokens and gradients: bf16, fp16 or fp32 (default bf16)
  --probs-dtype T      probs and their gradients: the --dtype, or fp32 with bf16 tokens
                       (default: the --dtype)
  --no-probs           run without probsOptional / permutedProbsOutputGradOptional
  --map-dtype T        routingMap: bool or int8 (default bool)
  --seed N             random seed (default 42); the same seed gives the same problem

execution:
  --threads N          CPU threads for the operators (default: MOEPERM_NUM_THREADS, else
                       every hardware thread); results are identical for any count
  --backend B          cpu, reference or auto (default: MOEPERM_BACKEND, else auto = the
                       fastest backend that supports the problem); the C API is steered
                       through MOEPERM_BACKEND, which this flag sets
  --op OP              run one operator only: permute, unpermute, unpermute-grad or
                       permute-grad (its inputs from the operators before it are computed
                       by the reference backend, untimed; alone, the permute Grad takes a
                       random gradient)
  --repeat N           timed iterations of each operator (default 1); the report shows the
                       best time; the outputs of the last one are verified
  -h, --help           print this help

report: each operator's plan (backend, sizes, workspace), the time of GetWorkspaceSize and
of execute + aclrtSynchronizeStream (the workspace is allocated between the two and not
timed), the bytes each call must move at least (reads + writes) and the effective GB/s.

exit status: 0 verified bitwise identical; 1 an operator or runtime call failed (its status
and aclGetRecentErrMsg() are printed) or outputs differ (the count of differing elements
per output is printed); 2 bad command line.

examples:
  moeperm run
  moeperm run -T 4096 -H 7168 -E 256 -C 16 --drop-and-pad --dtype fp32
  moeperm run -E 8 -K 2 -H 4096 --probs-dtype fp32 --threads 1 --repeat 5
  moeperm run --op unpermute-grad --repeat 5
)";

const char *const kBenchHelp =
    R"(usage: moeperm bench [flags]

Times the operators of the token path (the CPU backend, through the C++ API: plans are
built once, as a training loop would) on the SPEC §7 shapes: each iteration runs permute,
unpermute (identity experts, with probs), unpermute Grad (with the probs gradient) and
permute Grad, each reading what the one before it wrote, then the same path through the
ragged pair (Megatron-LM's semantics, docs/ragged.md) and the chunk sort of its rows and
its Grad (expert parallelism's sort by local expert, docs/sort_chunks.md). For each case and operator it
reports the median of the timed runs after warm-up, the bytes one call must move at least
(reads + writes), the effective GB/s, and the ratio to a multi-threaded copy that moves
the same number of bytes (copies half of them), timed in the same run right after the
operator: the faster of the C library's memcpy and a streaming copy (non-temporal
stores), each timed, so that the ceiling does not change method where the C library
does. It is the practical ceiling of a memory-bound operator on this machine. "vs
traffic" compares with the operator's own read/write mix moved as plainly as it can be
(the smaller stream copied the same way, the rest of the larger one streamed): where a
one-way stream is slower than a copy (as on 2-core VMs), operators that mostly write
(the permutes) or mostly read (the sums) sit above the memcpy ratio but near this one
(docs/cpu-performance.md). The named cases also time each operator planned
per call as a CANN program calls it (plan + workspace + run; "plan/call", against the plan
built once) and the single-threaded reference kernels. The output starts with the host: CPU
model, hardware threads, caches (cpu0's, from sysfs), the CPU kernels' instruction set and
the pages of the buffers (`--json` records the same under "host"), so tables from different
hosts can be told apart.

suites (default: all three):
  named    deepseek     T=4096 H=7168 E=256 K=8 bf16 drop-less, with probs
           mixtral      T=8192 H=4096 E=8 K=2 bf16 drop-less, with probs
           cann-sample  T=4096 H=7168 E=256 C=16 fp32 drop-and-pad, with probs
  sweep    deepseek with T = 512, 1024, ..., 16384 (how time grows with the work)
  threads  deepseek with 1 .. N threads (scaling)
  smoke    (only when named) the named kinds at T=257 H=96 E=16: checks the bench runs
           every operator and column; its times mean nothing
  isa      (only when named) deepseek under each vector ISA this CPU has (avx2, avx512),
           on 1 thread and on N, in one process: compares the kernel variants at one
           memory speed (MOEPERM_CPU_ISA forces one variant for every suite)

flags:
  --suite S            run suite S (repeatable)
  --runs N             timed runs per operator, N >= 10 (default 10)
  --warmup N           untimed runs first (default 2)
  --reference-runs N   timed runs of the reference kernels in the named suite (default 1;
                       0 skips them)
  --threads N          threads of the operators and of the memcpy (default: every
                       hardware thread); the threads suite goes from 1 to N
  --device D           cpu (default) or cuda: the CUDA backend on GPU 0, through
                       moeperm::run_async on one stream, timed with CUDA events; the
                       ceiling is a device-to-device cudaMemcpyAsync of the same bytes
                       in the same run, and every operator's outputs are compared bit
                       for bit with the CPU backend's once (the last column); no threads
                       or isa suite
  --huge-pages         advise transparent huge pages for every buffer of 4 MiB and more
                       (the operators' and the memcpy's), as aclrtMalloc does; default:
                       the pages malloc gives, as for NumPy or PyTorch tensors
  --json FILE          also write every figure as JSON to FILE (- for stdout)
  -h, --help           print this help

example:
  moeperm bench --suite named --json bench.json
)";

}  // namespace moeperm::cli
