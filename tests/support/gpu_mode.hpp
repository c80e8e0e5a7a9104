// The `gpu` label: CTest runs the conformance binaries a second time with
// MOEPERM_TEST_DEVICE=cuda (and MOEPERM_DEVICE=cuda). In that mode every run that a test
// asks of a fast backend (run_forward / run_backward with Backend::cpu or automatic, and
// c_forward / c_backward) runs on the CUDA backend instead: the problem's whole storage is
// uploaded (outputs keep their poison, so unwritten elements and writes outside a view still
// show), the operator runs on the GPU, and every tensor is downloaded again, also when the
// operator fails. The tests' expectations (bitwise equality with the reference, untouched
// outputs on a data error) are unchanged. Without a GPU every test of the binary is skipped
// with the reason "no CUDA GPU".
#pragma once

#include <problem.hpp>

namespace moeperm::testing {

bool gpu_mode();
// Runs the forward (grad = false) or the backward of `p` on the GPU; throws like run().
// run_forward / run_backward with Backend::cuda come here in any mode.
void run_on_gpu(tools::Problem &p, bool grad);

struct CStatus;
// The C API two-phase call on the GPU, default stream, device tensors and workspace.
CStatus c_run_on_gpu(tools::Problem &p, bool grad);

}  // namespace moeperm::testing
