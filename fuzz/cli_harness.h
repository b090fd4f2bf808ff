/* SPDX-License-Identifier: Apache-2.0 */
/* cli_harness.h: the body shared by the command-line fuzz targets. The
 * including file defines TOOL (a string), includes the tool's source with
 * main renamed, and defines OPTS_INIT, the tool's default struct opts
 * (the tool's own OPTS_DEFAULT, so that the two cannot drift apart). */
#ifndef ZKLOCK_FUZZ_CLI_HARNESS_H
#define ZKLOCK_FUZZ_CLI_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  /* usage and errors go to the terminal otherwise */
  if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
    return 0;
  return 0;
}

/* The input is the arguments, separated by NUL or newline. */
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char *buf = malloc(size + 1), *argv[34];
  struct opts o = OPTS_INIT;
  size_t i, start = 0;
  int argc = 1, first = 0;
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  argv[0] = TOOL;
  for (i = 0; i <= size && argc < 33; i++)
    if (i == size || buf[i] == '\0' || buf[i] == '\n') {
      buf[i] = '\0';
      argv[argc++] = buf + start;
      start = i + 1;
    }
  argv[argc] = NULL;
  optind = 0; /* glibc: full re-initialisation of getopt */
  parse(argc, argv, &o, &first);
  free(o.cc.scheme); /* an --auth-file the input named may have been read */
  free(o.cc.cred);
  free(buf);
  return 0;
}

#endif
