/* Fuzz target: zklock(1)'s command line, parsed the way main() parses it. */
#define main zklock_main
#include "../tools/zklock.c"
#undef main

#define TOOL "zklock"
#define OPTS_INIT {"127.0.0.1:2181", "/locks", 0, 0, -1, 1, 10000, 5000}
#include "cli_harness.h"
