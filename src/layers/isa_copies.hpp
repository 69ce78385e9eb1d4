// The CPU kernels compiled once per instruction set (AVX-512, AVX2 and the
// baseline, chosen at run time through core/cpu_isa.hpp) share these two
// switches.
#pragma once

// The copies for AVX-512 and AVX2 need GCC's target attribute (x86-64 only).
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define XTRAIN_HAVE_ISA_COPIES 1
#endif

// A kernel body, inlined into each instruction set's copy (and compiled
// there for that set).
#define XTRAIN_KERNEL_BODY __attribute__((always_inline)) inline

// Unrolls the loop that follows completely (a loop over a kernel's registers:
// GCC keeps an array of vectors in registers only when every index into it is
// a constant, and its own unrolling heuristics stop short of some of them).
#if defined(__GNUC__) && !defined(__clang__)
#define XTRAIN_UNROLL _Pragma("GCC unroll 16")
#else
#define XTRAIN_UNROLL
#endif
