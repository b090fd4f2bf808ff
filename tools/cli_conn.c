/* SPDX-License-Identifier: Apache-2.0 */
/* cli_conn.c: how the tools reach the ensemble: the auth file, the log
 * level, the connection (given up early when no server takes
 * connections at all), and the messages for what fails there or later. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* The chroot suffix of the HOSTS connected to ("/myapp" of
 * "zk1:2181/myapp"), for messages; NULL when there is none. It points into
 * the HOSTS string, which lives as long as the process (argv, environ). */
static const char *chroot_at;

/* Reads "scheme:credentials" from path into cc. The text is a secret: no
 * message ever quotes it. */
static int read_auth_file(cli_conn_t *cc, const char *path) {
  char buf[4097], *colon;
  size_t len = 0;
  ssize_t r;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    cli_error("cannot read auth file '%s': %s", path, strerror(errno));
    return CLI_EXIT_USAGE;
  }
  while (len < sizeof buf && (r = read(fd, buf + len, sizeof buf - len)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      cli_error("cannot read auth file '%s': %s", path, strerror(errno));
      close(fd);
      explicit_bzero(buf, sizeof buf);
      return CLI_EXIT_USAGE;
    }
    len += (size_t)r;
  }
  close(fd);
  if (len == sizeof buf) {
    explicit_bzero(buf, sizeof buf);
    cli_error("auth file '%s' is too long: it holds one line "
              "scheme:credentials",
              path);
    return CLI_EXIT_USAGE;
  }
  if (len > 0 && buf[len - 1] == '\n')
    len--;
  if (len > 0 && buf[len - 1] == '\r')
    len--;
  buf[len] = '\0';
  colon = strchr(buf, ':');
  if (strlen(buf) != len || strpbrk(buf, "\r\n") || !colon || colon == buf ||
      !colon[1]) {
    explicit_bzero(buf, sizeof buf);
    cli_error("auth file '%s' must hold one line scheme:credentials, "
              "both non-empty (e.g. digest:user:password)",
              path);
    return CLI_EXIT_USAGE;
  }
  *colon = '\0';
  cc->scheme = strdup(buf);
  cc->cred = strdup(colon + 1);
  explicit_bzero(buf, sizeof buf);
  if (!cc->scheme || !cc->cred) {
    cli_error("out of memory");
    return CLI_EXIT_SOFTWARE;
  }
  return 0;
}

/* A $ZKLOCK_LOG value: the level, 0 for none, -1 if unknown. */
static int log_level_named(const char *s) {
  static const char *const names[] = {"none", "error", "warn", "info",
                                      "debug"};
  int i;
  for (i = 0; i < 5; i++)
    if (strcasecmp(s, names[i]) == 0)
      return i; /* ZKL_LOG_ERROR is 1 ... ZKL_LOG_DEBUG 4 */
  return -1;
}

int cli_conn_ready(cli_conn_t *cc) {
  const char *file = cc->auth_file, *env = getenv("ZKLOCK_LOG");
  int rc, level = 0;
  if (!cc->hosts || !*cc->hosts)
    return cli_usage("-s needs a host:port list");
  if (env && *env && (level = log_level_named(env)) < 0)
    return cli_usage("$ZKLOCK_LOG needs none, error, warn, info or debug");
  if (cc->verbose && level < (cc->verbose > 1 ? ZKL_LOG_DEBUG : ZKL_LOG_INFO))
    level = cc->verbose > 1 ? ZKL_LOG_DEBUG : ZKL_LOG_INFO;
  cc->log_level = level;
  if (!file) {
    file = getenv("ZKLOCK_AUTH_FILE");
    if (file && !*file)
      file = NULL;
  } else if (!*file) {
    return cli_usage("--auth-file needs a file name");
  }
  if (file && (rc = read_auth_file(cc, file)) != 0)
    return rc;
  if (cc->acl < 0)
    cc->acl = ZKL_ACL_OPEN;
  if (cc->acl == ZKL_ACL_CREATOR && !cc->scheme)
    return cli_usage("--acl creator needs credentials "
                     "(--auth-file or $ZKLOCK_AUTH_FILE)");
  return 0;
}

const char *cli_default_hosts(void) {
  const char *h = getenv("ZKLOCK_SERVERS");
  return h && *h ? h : "127.0.0.1:2181";
}

static void wipe(char **s) {
  if (*s) {
    explicit_bzero(*s, strlen(*s));
    free(*s);
    *s = NULL;
  }
}

/* The library's log hook: "prog: LEVEL: message" on stderr, one line. */
static void log_line(void *ctx, int level, const char *msg) {
  static const char *const names[] = {"log", "error", "warn", "info",
                                      "debug"};
  (void)ctx;
  flockfile(stderr);
  fprintf(stderr, "%s: %s: ", cli_prog,
          names[level >= 1 && level <= 4 ? level : 0]);
  cli_put_text(stderr, msg, strlen(msg));
  fputc('\n', stderr);
  funlockfile(stderr);
}

/* Whether a TCP connect to ai takes: 1 it does, or cannot tell within
 * ms (a network that drops packets, a server too busy to accept); 0 when
 * it is refused or there is no route. */
static int connect_takes(const struct addrinfo *ai, int ms) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  ai->ai_protocol);
  int err = 0;
  socklen_t len = sizeof err;
  struct pollfd p;
  if (fd < 0)
    return 1;
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
    close(fd);
    return 1;
  }
  err = errno;
  if (err == EINPROGRESS) {
    p.fd = fd, p.events = POLLOUT, p.revents = 0;
    if (poll(&p, 1, ms) <= 0 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      err = 0; /* no answer yet: cannot tell */
  }
  close(fd);
  return !(err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH ||
           err == EADDRNOTAVAIL || err == EACCES || err == EPERM);
}

/* Whether any server of a connect string may be there: 1 when one takes a
 * TCP connection, or cannot be judged; 0 when every address of every
 * host:port refuses, has no route, or does not resolve. Each connection is
 * closed at once, before a byte is sent. */
static int any_server_may_answer(const char *hosts) {
  char buf[2048], *save = NULL, *tok;
  size_t n = strcspn(hosts, "/"); /* the chroot is no server */
  if (n >= sizeof buf)
    return 1;
  memcpy(buf, hosts, n);
  buf[n] = '\0';
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    struct addrinfo hints, *res = NULL, *ai;
    char *host = tok + strspn(tok, " "), *port = strrchr(host, ':');
    int may = 0;
    if (!port)
      return 1; /* not ours to judge: the client said what it parses */
    *port++ = '\0';
    if (*host == '[' && host[strlen(host) - 1] == ']') /* [::1]:2181 */
      host++, host[strlen(host) - 1] = '\0';
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0)
      continue;
    for (ai = res; ai && !may; ai = ai->ai_next)
      may = connect_takes(ai, 500);
    freeaddrinfo(res);
    if (may)
      return 1;
  }
  return 0;
}

/* zkl_client_create(), waiting at most CLI_CONNECT_PROBE_MS at first, and
 * the rest of the session timeout only if a server may answer. *refused:
 * gave up early because none does. */
static int create_client(zkl_client_t **c, const cli_conn_t *cc,
                         zkl_client_options_t *o, int *refused) {
  int64_t start = zkl_now_ms(), left;
  int rc;
  *refused = 0;
  o->connect_timeout_ms = cc->session_ms > CLI_CONNECT_PROBE_MS
                              ? CLI_CONNECT_PROBE_MS
                              : (int)cc->session_ms;
  rc = zkl_client_create(c, cc->hosts, o);
  if (rc != ZKL_ECONNECT || cc->session_ms <= CLI_CONNECT_PROBE_MS)
    return rc;
  /* slow is not absent: a server that takes connections (busy, electing
   * a leader) gets the whole session timeout, as before */
  if (!any_server_may_answer(cc->hosts)) {
    *refused = 1;
    return rc;
  }
  left = cc->session_ms - (zkl_now_ms() - start);
  if (left <= 0)
    return rc;
  o->connect_timeout_ms = (int)left;
  return zkl_client_create(c, cc->hosts, o);
}

/* The message for the credentials the ensemble rejected: who we tried to
 * be, never the secret after the user name. */
static void auth_rejected(const cli_conn_t *cc) {
  const char *colon = cc->cred ? strchr(cc->cred, ':') : NULL;
  if (colon)
    cli_error("the ensemble at %s rejected the credentials of scheme "
              "'%s', user '%.*s'",
              cc->hosts, cc->scheme, (int)(colon - cc->cred), cc->cred);
  else
    cli_error("the ensemble at %s rejected the credentials of scheme '%s'",
              cc->hosts, cc->scheme ? cc->scheme : "?");
}

int cli_connect(zkl_client_t **c, cli_conn_t *cc) {
  zkl_client_options_t o = {0};
  const char *slash = strchr(cc->hosts, '/');
  int rc, code = CLI_EXIT_UNAVAILABLE, refused;
  chroot_at = slash && slash[1] ? slash : NULL;
  o.session_timeout_ms = (int)cc->session_ms;
  o.auth_scheme = cc->scheme;
  o.auth = cc->cred;
  o.acl = cc->acl < 0 ? ZKL_ACL_OPEN : cc->acl;
  o.log_fn = cc->log_level > 0 ? log_line : NULL;
  o.log_level = cc->log_level > 0 ? cc->log_level : 0;
  rc = create_client(c, cc, &o, &refused);
  switch (rc) {
  case ZKL_OK:
    code = 0;
    break;
  case ZKL_EAUTH:
    auth_rejected(cc);
    code = CLI_EXIT_NOPERM;
    break;
  case ZKL_ECONNECT:
    if (refused)
      cli_error("cannot reach ZooKeeper at '%s': every server refused the "
                "connection or is unreachable (set -s HOSTS or "
                "$ZKLOCK_SERVERS)",
                cc->hosts);
    else
      cli_error("cannot reach ZooKeeper at '%s' within %ld ms (set -s HOSTS "
                "or $ZKLOCK_SERVERS)",
                cc->hosts, cc->session_ms);
    break;
  case ZKL_EINVAL:
    cli_error("cannot use ZooKeeper hosts '%s': not a host:port list, or "
              "a host name that does not resolve (set -s HOSTS or "
              "$ZKLOCK_SERVERS)",
              cc->hosts);
    break;
  case ZKL_ESYSTEM:
    /* what a resolver failure looked like before the library mapped it to
     * ZKL_EINVAL; a thread that cannot start is as fatal either way */
    cli_error("cannot start a ZooKeeper client for hosts '%s' (does every "
              "host name resolve?)",
              cc->hosts);
    break;
  default:
    cli_error("cannot connect to %s: %s", cc->hosts, zkl_strerror(rc));
    code = CLI_EXIT_SOFTWARE;
  }
  wipe(&cc->scheme);
  wipe(&cc->cred);
  return code;
}

int cli_fail(const char *what, int rc) {
  if (rc == ZKL_EAUTH) {
    cli_error("%s: %s", what, zkl_strerror(rc));
    return CLI_EXIT_NOPERM;
  }
  if (rc == ZKL_ZNOAUTH) {
    cli_error("%s: permission denied by the node's ACL", what);
    return CLI_EXIT_NOPERM;
  }
  /* the library makes every parent it needs under the chroot, but
   * ZooKeeper needs the chroot itself: nothing else can be missing */
  if (rc == ZKL_ZNONODE && chroot_at) {
    cli_error("%s: %s, the connect string's chroot, does not exist (create "
              "it, or leave it out of HOSTS)",
              what, chroot_at);
    return CLI_EXIT_SOFTWARE;
  }
  cli_error("%s: %s", what, zkl_strerror(rc));
  return CLI_EXIT_SOFTWARE;
}
