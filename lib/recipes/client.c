/* SPDX-License-Identifier: Apache-2.0 */
/* client.c: the client object: its public API and its life, from the first
 * session to the teardown. The rest of the client is in session.c (the
 * session's state machine), acq.c (acquisitions and the state of holds),
 * notice.c and loop.c (the event thread), deferred.c (deletes that wait for a
 * connection) and call.c and request.c (requests).
 *
 * Threads that touch a client:
 *  - user threads, which send requests and wait on condition variables;
 *  - ZooKeeper's completion thread, which runs our watchers and completions:
 *    they only update state under c->mu and signal, never block or call the
 *    user;
 *  - the client's event thread, which runs user callbacks (with no lock
 *    held), replaces an expired session, closes dead ZooKeeper handles,
 *    finishes deletes that could not reach the server (deferred.c), and
 *    declares holds LOST when the connection has been down too long. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"

#define MAGIC_CLIENT 0x7a6b6c63u

/* ---- public API ---------------------------------------------------------- */

/* The ACLs of the nodes the client makes: its own (read for all, every
 * right for its own identity, which it makes here), and the one the
 * options ask for every other node. */
static int acls_init(zkl_client_t *c, const zkl_client_options_t *o) {
  /* our own identity: the guard of a flat lock's release (release.c) */
  if (zkl__identity_make(&c->ident) != ZKL_OK)
    return ZKL_ESYSTEM;
  c->own_entries[0].perms = ZOO_PERM_READ;
  c->own_entries[0].id.scheme = (char *)"world";
  c->own_entries[0].id.id = (char *)"anyone";
  c->own_entries[1].perms = ZOO_PERM_ALL;
  c->own_entries[1].id.scheme = (char *)"digest";
  c->own_entries[1].id.id = c->ident.acl_id;
  c->own_acl.count = 2;
  c->own_acl.data = c->own_entries;
  if (o && o->acl == ZKL_ACL_CREATOR) {
    /* all rights to whoever authenticated the creating session, read to
     * all: waiters of other identities must still list and watch. A
     * digest identity is named as itself: "auth" would name every
     * identity of the session, our own secret one too (digest.c). */
    c->acl_entries[0].perms = ZOO_PERM_ALL;
    if (strcmp(c->auth_scheme, "digest") == 0 &&
        zkl__digest_id(c->auth, c->user_id, sizeof c->user_id) == ZKL_OK) {
      c->acl_entries[0].id.scheme = (char *)"digest";
      c->acl_entries[0].id.id = c->user_id;
    } else {
      c->acl_entries[0].id.scheme = (char *)"auth";
      c->acl_entries[0].id.id = (char *)"";
    }
    c->acl_entries[1].perms = ZOO_PERM_READ;
    c->acl_entries[1].id.scheme = (char *)"world";
    c->acl_entries[1].id.id = (char *)"anyone";
    c->acl_vec.count = 2;
    c->acl_vec.data = c->acl_entries;
    c->acl = &c->acl_vec;
  } else {
    c->acl = &ZOO_OPEN_ACL_UNSAFE;
  }
  return ZKL_OK;
}

static int client_init(zkl_client_t *c, const char *hosts,
                       const zkl_client_options_t *o) {
  c->dispatch_fd = -1;
  if (o && (o->flags & ZKL_CLIENT_DISPATCH) &&
      (c->dispatch_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
    return ZKL_ESYSTEM;
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    if (c->dispatch_fd >= 0)
      close(c->dispatch_fd);
    return ZKL_ESYSTEM;
  }
  if (zkl__cond_init(&c->cv) != ZKL_OK) {
    pthread_mutex_destroy(&c->mu);
    if (c->dispatch_fd >= 0)
      close(c->dispatch_fd);
    return ZKL_ESYSTEM;
  }
  c->hosts = zkl__strdup(hosts);
  c->timeout_req = o && o->session_timeout_ms > 0 ? o->session_timeout_ms
                                                  : 10000;
  c->log_fn = o ? o->log_fn : NULL;
  c->log_ctx = o ? o->log_ctx : NULL;
  c->log_level = o && o->log_level > 0 ? o->log_level : ZKL_LOG_WARN;
  c->fork_gen = atomic_load(&zkl__fork_gen);
  c->on_session = zkl__acqs_on_session;
  c->watcher = zkl__path_watcher;
  if (o && o->auth_scheme) {
    c->auth_scheme = zkl__strdup(o->auth_scheme);
    c->auth = zkl__strdup(o->auth);
    if (!c->auth_scheme || !c->auth)
      return ZKL_ENOMEM;
  }
  if (acls_init(c, o) != ZKL_OK)
    return ZKL_ESYSTEM;
  return c->hosts ? ZKL_OK : ZKL_ENOMEM;
}

static void client_free(zkl_client_t *c) {
  zkl__pdel_free_all(c);
  if (c->dispatch_fd >= 0)
    close(c->dispatch_fd);
  free(c->hosts);
  free(c->auth_scheme);
  if (c->auth) /* credentials: do not leave them in freed memory */
    memset(c->auth, 0, strlen(c->auth));
  memset(&c->ident, 0, sizeof c->ident);
  free(c->auth);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* Close every handle the client still has, then free it. No other thread
 * uses the client any more. */
static void client_teardown(zkl_client_t *c) {
  zkl__session_t *s;
  pthread_mutex_lock(&c->mu);
  c->stopping = 1;
  c->state = ZKL_CLIENT_CLOSED;
  atomic_store(&c->pub_state, ZKL_CLIENT_CLOSED);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (c->ev_running)
    pthread_join(c->ev_thread, NULL);
  c->ev_running = 0;
  pthread_mutex_lock(&c->mu);
  /* The C client drops, and leaks, answers that arrive while it closes a
   * handle: let the requests under way end first. Deferred deletes get a
   * moment only: closing the session deletes its ephemeral nodes anyway,
   * so their session references go after it (an expired session may have
   * no other), their records after the close, which may still complete
   * them. Reads of our own nodes end within the receive timeout. */
  zkl__quiesce(c, zkl_now_ms() + 1000, 1);
  zkl__pdel_release(c);
  zkl__quiesce(c, zkl_now_ms() + (c->timeout_req > 0 ? c->timeout_req : 10000),
               0);
  s = c->sess;
  c->sess = NULL;
  zkl__session_put(c, s);
  while (c->dead)
    zkl__close_dead(c);
  zkl__events_discard(c);
  pthread_mutex_unlock(&c->mu);
  client_free(c);
}

/* Whether opts (NULL: the defaults) can make a client. */
static int options_valid(const zkl_client_options_t *o) {
  return !o ||
         !(o->session_timeout_ms < 0 || o->log_level < 0 ||
           o->log_level > ZKL_LOG_DEBUG ||
           (o->auth_scheme && (!o->auth_scheme[0] || !o->auth)) ||
           (o->acl != ZKL_ACL_OPEN && o->acl != ZKL_ACL_CREATOR) ||
           (o->acl == ZKL_ACL_CREATOR && !o->auth_scheme) ||
           (o->flags & ~(unsigned)ZKL_CLIENT_DISPATCH));
}

/* A client set up from the options, with no session or thread yet. */
static int client_new(zkl_client_t **out, const char *hosts,
                      const zkl_client_options_t *o) {
  zkl_client_t *c = calloc(1, sizeof *c);
  int rc;
  if (!c)
    return ZKL_ENOMEM;
  rc = client_init(c, hosts, o);
  if (rc == ZKL_ESYSTEM) { /* nothing made to undo */
    free(c);
    return rc;
  }
  if (rc != ZKL_OK) {
    client_free(c);
    return rc;
  }
  *out = c;
  return ZKL_OK;
}

/* Asks the C client for the first session's handle. */
static int first_handle(zkl_client_t *c) {
  int e;
  if (zkl__new_session(c) == 0)
    return ZKL_OK;
  e = errno;
  /* a host list the C client cannot parse or resolve comes back as
   * EINVAL or as the resolver's errno; only these are the system's */
  return e == ENOMEM                                  ? ZKL_ENOMEM
         : e == EAGAIN || e == EMFILE || e == ENFILE ? ZKL_ESYSTEM
                                                      : ZKL_EINVAL;
}

/* Waits up to the connect timeout (not at all when it is negative) for the
 * first session and, with credentials, for the ensemble's verdict on
 * them: ZKL_OK, ZKL_EAUTH or ZKL_ECONNECT. */
static int first_session(zkl_client_t *c, const zkl_client_options_t *o) {
  int wait_ms = o && o->connect_timeout_ms ? o->connect_timeout_ms
                                           : c->timeout_req;
  int64_t end;
  int rc;
  if (wait_ms <= 0)
    return ZKL_OK;
  end = zkl_now_ms() + wait_ms;
  pthread_mutex_lock(&c->mu);
  rc = zkl__wait_usable(c, NULL, 0, end);
  /* credentials are judged after the session is made: wait for that */
  while (rc == ZKL_OK && c->auth_scheme && !c->sess->auth_done &&
         !c->auth_failed) {
    struct timespec ts;
    zkl__deadline_ts(end, &ts);
    if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT &&
        zkl_now_ms() >= end)
      rc = ZKL_ETIMEDOUT;
  }
  if (c->auth_failed)
    rc = ZKL_EAUTH;
  pthread_mutex_unlock(&c->mu);
  return rc == ZKL_OK || rc == ZKL_EAUTH ? rc : ZKL_ECONNECT;
}

int zkl_client_create(zkl_client_t **out, const char *hosts,
                      const zkl_client_options_t *opts) {
  zkl_client_t *c;
  int rc;
  if (out) /* NULL whatever the failure, as the header promises */
    *out = NULL;
  if (!out || !hosts || !hosts[0])
    return ZKL_EINVAL;
  if (!options_valid(opts))
    return ZKL_EINVAL;
  zkl__fork_watch();
  if ((rc = client_new(&c, hosts, opts)) != ZKL_OK)
    return rc;
  if ((rc = first_handle(c)) != ZKL_OK) {
    client_free(c);
    return rc;
  }
  if (pthread_create(&c->ev_thread, NULL, zkl__event_main, c) != 0) {
    client_teardown(c);
    return ZKL_ESYSTEM;
  }
  c->ev_running = 1;
  rc = first_session(c, opts);
  if (rc == ZKL_OK && zkl__handle_add(c) != ZKL_OK)
    rc = ZKL_ENOMEM;
  if (rc != ZKL_OK) {
    client_teardown(c);
    return rc;
  }
  *out = c;
  return ZKL_OK;
}

int zkl_client_destroy(zkl_client_t *c) {
  int busy;
  if (!c)
    return ZKL_OK;
  if (!zkl__handle_live(c))
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED; /* its lock may be held by a thread of the parent */
  pthread_mutex_lock(&c->mu);
  busy = c->nqueues > 0 || zkl__on_event_thread(c);
  pthread_mutex_unlock(&c->mu);
  if (busy)
    return ZKL_EBUSY;
  if (!zkl__handle_remove(c))
    return ZKL_EINVAL; /* lost a race with another destroy */
  client_teardown(c);
  return ZKL_OK;
}

int zkl_client_state(const zkl_client_t *c) {
  if (c && zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  return c ? atomic_load(&c->pub_state) : ZKL_CLIENT_CLOSED;
}

int64_t zkl_client_session_id(const zkl_client_t *c) {
  return c && !zkl__forked(c->fork_gen) ? atomic_load(&c->session_id) : 0;
}

int zkl_client_session_timeout(const zkl_client_t *c) {
  int t;
  if (!c || zkl__forked(c->fork_gen))
    return 0;
  pthread_mutex_lock((pthread_mutex_t *)&c->mu);
  t = c->timeout_neg;
  pthread_mutex_unlock((pthread_mutex_t *)&c->mu);
  return t;
}

uint64_t zkl_client_request_count(const zkl_client_t *c) {
  return c ? atomic_load_explicit(&c->requests, memory_order_relaxed) : 0;
}

int zkl_sweep(zkl_client_t *c, const char *root, int64_t older_than_ms,
              size_t *removed) {
  size_t n = 0;
  int rc;
  if (removed)
    *removed = 0;
  if (!c || !zkl__handle_live(c) || !zkl__valid_root(root) ||
      older_than_ms < 0)
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  rc = zkl__sweep(c, root, older_than_ms, &n);
  if (removed)
    *removed = n;
  return rc;
}

int zkl_locks_list(zkl_client_t *c, const char *root, zkl_lock_info_t **out,
                   size_t *count) {
  if (out) /* NULL whatever the failure, as the header promises */
    *out = NULL;
  if (count)
    *count = 0;
  if (!root)
    root = "/locks";
  if (!c || !out || !count || !zkl__handle_live(c) || !zkl__valid_root(root))
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  return zkl__root_list(c, root, out, count);
}

int zkl_client_wait_connected(zkl_client_t *c, int64_t deadline_ms) {
  int64_t until = zkl__deadline_in(deadline_ms); /* -1: none */
  int rc = ZKL_OK;
  struct timespec ts;
  if (!c)
    return ZKL_EINVAL;
  if (zkl__forked(c->fork_gen))
    return ZKL_EFORKED;
  zkl__deadline_ts(until, &ts);
  pthread_mutex_lock(&c->mu);
  while (c->state != ZKL_CLIENT_CONNECTED && rc == ZKL_OK) {
    if (c->stopping)
      rc = ZKL_ECLOSED;
    else if (c->auth_failed)
      rc = ZKL_EAUTH;
    else if (until < 0)
      pthread_cond_wait(&c->cv, &c->mu);
    else if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT)
      rc = ZKL_ETIMEDOUT;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}
