// NCCMATCH_SIMD_CLONES: compile a hot CPU function for AVX-512 (x86-64-v4), AVX2 and baseline,
// picked at run time (ifunc), so one build runs everywhere and uses the widest vectors present.
// Every clone does the same arithmetic, so results do not depend on the clone.
#pragma once

// Not under ThreadSanitizer: GCC instruments the ifunc resolver too, and the dynamic loader runs
// it before the TSan runtime is initialised (the program dies with SIGSEGV before main). TSan
// looks for races between threads, which the vector width does not change.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define NCCMATCH_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define NCCMATCH_SIMD_CLONES
#endif
