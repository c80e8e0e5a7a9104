// Thread count of the CPU backend. Results never depend on it (Note [Determinism]): work
// is split into blocks whose boundaries depend on the problem only, and every output
// element is owned by exactly one block.
#pragma once

namespace moeperm::detail::cpu {

// MOEPERM_NUM_THREADS, else the value set through moeperm::set_num_threads(), else the
// hardware threads.
int num_threads();

}  // namespace moeperm::detail::cpu
