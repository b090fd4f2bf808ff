/* Fuzz target: zkelect(1)'s command line, parsed the way main() parses it. */
#define main zkelect_main
#include "../tools/zkelect.c"
#undef main

#define TOOL "zkelect"
#define OPTS_INIT {"127.0.0.1:2181", "/election", NULL, 0, 0, 10000, 5000}
#include "cli_harness.h"
