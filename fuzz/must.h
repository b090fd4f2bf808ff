/* SPDX-License-Identifier: Apache-2.0 */
/* must.h: the check of the fuzz targets that test properties: a property
 * that fails traps, which libFuzzer reports as a crash with its input. */
#ifndef ZKLOCK_FUZZ_MUST_H
#define ZKLOCK_FUZZ_MUST_H

#define MUST(cond)                                                             \
  do {                                                                         \
    if (!(cond))                                                               \
      __builtin_trap();                                                        \
  } while (0)

#endif
