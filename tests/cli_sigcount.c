/* SPDX-License-Identifier: Apache-2.0 */
/* cli_sigcount.c: a COMMAND for tests/cli.itest that logs every SIGINT it
 * is delivered, with who sent it, so a test can tell one from two.
 *
 *   cli_sigcount LOG READY STOP SECS
 *     Appends "INT code=C pid=P" to LOG per SIGINT (C: si_code, 128 for
 *     the kernel's, i.e. the terminal's; 0 for kill()), creates READY once
 *     the handler is in place, and exits 0 when STOP exists or after SECS.
 *
 * A shell trap would not do: the shell runs a trap once however many
 * signals arrived before it got to it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd = -1;

/* Appends the decimal form of v to p; async-signal-safe. */
static char *put_num(char *p, long v) {
  char tmp[24];
  int n = 0;
  if (v < 0) {
    *p++ = '-';
    v = -v;
  }
  do
    tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n > 0)
    *p++ = tmp[--n];
  return p;
}

static void on_int(int sig, siginfo_t *si, void *uc) {
  char line[80], *p = line;
  (void)sig, (void)uc;
  memcpy(p, "INT code=", 9);
  p = put_num(p + 9, si->si_code);
  memcpy(p, " pid=", 5);
  p = put_num(p + 5, (long)si->si_pid);
  *p++ = '\n';
  if (write(log_fd, line, (size_t)(p - line)) < 0)
    _exit(3);
}

int main(int argc, char **argv) {
  struct sigaction sa;
  struct timespec tick = {0, 50 * 1000000L};
  long rounds;
  int fd;
  if (argc != 5)
    return 2;
  log_fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return 2;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_int;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGINT, &sa, NULL) != 0)
    return 2;
  fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return 2;
  close(fd);
  for (rounds = atol(argv[4]) * 20; rounds > 0; rounds--) {
    if (access(argv[3], F_OK) == 0)
      return 0;
    nanosleep(&tick, NULL);
  }
  return 0;
}
