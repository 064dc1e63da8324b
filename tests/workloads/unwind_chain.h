/* The call chains the unwinder tests sample (tests/workloads/unwind_driver.c).
 * Implemented twice with the same contract: unwind_chain_c.c (C) and
 * unwind_chain_cxx.cc (C++: namespaces, static members, templates). */
#ifndef STOWAWAY_TEST_UNWIND_CHAIN_H
#define STOWAWAY_TEST_UNWIND_CHAIN_H

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*chain_keep_going_fn)(void);

/* a -> b -> c -> leaf; leaf spins while keep_going() returns nonzero. */
int chain_run(chain_keep_going_fn keep_going);
/* Entry addresses of leaf, c, b, a (leaf first), for symbolizing the
 * expected names whatever the language mangles them to. */
void chain_functions(const void *fns[4]);
/* Recurses `depth` times, then spins like chain_run. */
int chain_recurse(int depth, chain_keep_going_fn keep_going);
const void *chain_recurse_function(void);

/* In the shared library (unwind_shlib.c), called through the PLT. */
int shlib_spin(chain_keep_going_fn keep_going);
const void *shlib_leaf_function(void);

#ifdef __cplusplus
}
#endif

#endif
