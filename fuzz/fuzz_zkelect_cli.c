/* Fuzz target: zkelect(1)'s command line (NUL- or newline-separated
 * arguments), parsed the way main() parses it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define main zkelect_main
#include "../tools/zkelect.c"
#undef main

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  /* usage and errors go to the terminal otherwise */
  if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
    return 0;
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char *buf = malloc(size + 1), *argv[34];
  struct opts o = {"127.0.0.1:2181", "/election", NULL, 0, 0, 10000, 5000};
  size_t i, start = 0;
  int argc = 1, first = 0;
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  argv[0] = "zkelect";
  for (i = 0; i <= size && argc < 33; i++)
    if (i == size || buf[i] == '\0' || buf[i] == '\n') {
      buf[i] = '\0';
      argv[argc++] = buf + start;
      start = i + 1;
    }
  argv[argc] = NULL;
  optind = 0; /* glibc: full re-initialisation of getopt */
  parse(argc, argv, &o, &first);
  free(buf);
  return 0;
}
