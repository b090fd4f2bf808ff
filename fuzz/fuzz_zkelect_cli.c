/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: zkelect(1)'s command line, parsed the way main() parses it. */
#define main zkelect_main
#include "../tools/zkelect.c"
#undef main

#define TOOL "zkelect"
#define OPTS_INIT OPTS_DEFAULT
#include "cli_harness.h"
