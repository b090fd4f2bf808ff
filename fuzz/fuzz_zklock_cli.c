/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: zklock(1)'s command line, parsed the way main() parses it. */
#define main zklock_main
#include "../tools/zklock.c"
#undef main

#define TOOL "zklock"
#define OPTS_INIT OPTS_DEFAULT
#include "cli_harness.h"
