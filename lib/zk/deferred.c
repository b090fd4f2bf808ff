/* SPDX-License-Identifier: Apache-2.0 */
/* deferred.c: nodes of ours to delete once connected again.
 *
 * A delete that could not reach the server, a hold declared LOST while
 * disconnected, or a create whose reply was lost leaves a node that may
 * still exist on a live session and would block its queue. Each is
 * recorded here, by path or (for the lost create) by the guid in its
 * name, and the client's event thread finishes it when the session is
 * connected: it lists the directory for the guid if need be, reads each
 * candidate, and deletes only one whose ephemeral owner is our session
 * (and, for a flat lock's node, whose name anyone may use, one created at
 * the czxid we knew, or whose data carries our guid). A delete whose
 * reply is lost is never sent again blind: the node is read again first.
 * Anyone may create a node under a name that contains our guid; such a
 * copy is never ours to delete, and must not hide ours (model/, F4).
 * A record is dropped when its session ends, which removes the node
 * anyway. All of it runs under c->mu; completions come from ZooKeeper's
 * completion thread. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct zkl__pdel {
  zkl_client_t *c;
  zkl__call_t call; /* the request in flight, if any */
  zkl__session_t *s;
  char *path;  /* the candidate being read or deleted; NULL: find by guid */
  char *dir;   /* by guid: the directory to list */
  char guid[ZKL__GUID_LEN + 1];
  /* path only if created at czxid (0: any), or only if its data carries
   * guid (bydata): a flat lock's name is everybody's (zk.h) */
  int64_t czxid;
  int bydata;
  char **cand; /* by guid: the other names found with our guid, as paths */
  int ncand;
  int listed;
  int mine;    /* path was read: ours */
  int inflight;
  int done;
  struct zkl__pdel *next;
};

static struct zkl__pdel *defer(zkl_client_t *c, zkl__session_t *s,
                               const char *path, const char *dir,
                               const char *guid) {
  struct zkl__pdel *p = calloc(1, sizeof *p);
  if (!p)
    return NULL; /* the node still goes when the session ends */
  p->c = c;
  p->s = s;
  s->refs++;
  p->path = path ? zkl__strdup(path) : NULL;
  p->dir = dir ? zkl__strdup(dir) : NULL;
  p->listed = path != NULL;
  if (guid)
    memcpy(p->guid, guid, sizeof p->guid);
  p->next = c->pdel;
  c->pdel = p;
  pthread_cond_broadcast(&c->cv);
  return p;
}

void zkl__defer_delete_now(zkl_client_t *c, zkl__session_t *s,
                           const char *path, int64_t czxid) {
  struct zkl__pdel *p = defer(c, s, path, NULL, NULL);
  if (p)
    p->czxid = czxid;
}

void zkl__defer_delete(zkl_client_t *c, zkl__session_t *s, const char *path,
                       int64_t czxid) {
  zkl__post_log(c, ZKL_LOG_INFO, "%s: will be deleted once connected", path);
  zkl__defer_delete_now(c, s, path, czxid);
}

void zkl__defer_delete_guid(zkl_client_t *c, zkl__session_t *s,
                            const char *path, const char *guid) {
  struct zkl__pdel *p = defer(c, s, path, NULL, guid);
  if (p)
    p->bydata = 1;
}

void zkl__defer_find_delete(zkl_client_t *c, zkl__session_t *s,
                            const char *dir, const char *guid) {
  defer(c, s, NULL, dir, guid);
}

/* The candidate at hand is gone or not ours: on to the next, if any. */
static void next_candidate(struct zkl__pdel *p) {
  free(p->path);
  p->path = NULL;
  p->mine = 0;
  if (p->ncand > 0)
    p->path = p->cand[--p->ncand];
  else
    p->done = 1;
}

static void on_pdel_deleted(zkl__call_t *call) {
  struct zkl__pdel *p = call->ctx;
  p->inflight = 0;
  if (zkl__is_conn_error(call->rc))
    p->mine = 0; /* read it again: the delete may have landed */
  else
    p->done = 1; /* deleted, already gone, or the session is over */
  pthread_cond_broadcast(&p->c->cv);
}

static void on_pdel_read(zkl__call_t *call) {
  struct zkl__pdel *p = call->ctx;
  int rc = call->rc;
  p->inflight = 0;
  if (rc == ZOK && call->stat.ephemeralOwner == p->s->id &&
      (!p->czxid || call->stat.czxid == p->czxid) &&
      (!p->bydata ||
       zkl__data_has_guid(call->data, (size_t)(call->data_len > 0
                                                  ? call->data_len
                                                  : 0),
                          p->guid))) {
    p->mine = 1;
  } else if (rc == ZOK || rc == ZNONODE) {
    if (rc == ZOK)
      zkl__post_log(p->c, ZKL_LOG_WARN,
                    "%s: not ours (owner 0x%llx), left alone", p->path,
                    (unsigned long long)call->stat.ephemeralOwner);
    next_candidate(p);
  } else if (!zkl__is_conn_error(rc)) {
    p->done = 1;
  }
  zkl__call_free(call); /* a flat node's read carried its data */
  pthread_cond_broadcast(&p->c->cv);
}

static void on_pdel_listed(zkl__call_t *call) {
  struct zkl__pdel *p = call->ctx;
  int i;
  p->inflight = 0;
  if (call->rc == ZOK) {
    char *slash = zkl__concat(p->dir, "/");
    int n = call->kids.count;
    p->listed = 1;
    p->cand = n > 0 ? calloc((size_t)n, sizeof *p->cand) : NULL;
    for (i = 0; slash && p->cand && i < n; i++)
      if (strstr(call->kids.data[i], p->guid) &&
          (p->cand[p->ncand] = zkl__concat(slash, call->kids.data[i])))
        p->ncand++;
    free(slash);
    next_candidate(p);
  } else if (!zkl__is_conn_error(call->rc) && call->rc != ZKL_ENOMEM) {
    p->done = 1; /* out of memory for the names: list again later */
  }
  zkl__call_free(call);
  pthread_cond_broadcast(&p->c->cv);
}

static void pdel_destroy(struct zkl__pdel *p) {
  while (p->ncand > 0)
    free(p->cand[--p->ncand]);
  free(p->cand);
  free(p->path);
  free(p->dir);
  free(p);
}

void zkl__pdel_run(zkl_client_t *c) {
  struct zkl__pdel **pp = &c->pdel, *p;
  while ((p = *pp)) {
    if (!p->inflight && (p->done || p->s->expired)) {
      *pp = p->next;
      zkl__session_put(c, p->s);
      pdel_destroy(p);
      continue;
    }
    if (!p->inflight && c->state == ZKL_CLIENT_CONNECTED && p->s == c->sess) {
      int rc;
      p->inflight = 1;
      if (!p->listed) {
        zkl__call_init_fn(&p->call, c, on_pdel_listed, p);
        rc = zkl__children(&p->call, p->s, p->dir);
      } else if (!p->mine) {
        zkl__call_init_fn(&p->call, c, on_pdel_read, p);
        rc = p->bydata ? zkl__get(&p->call, p->s, p->path, 0)
                       : zkl__exists(&p->call, p->s, p->path);
      } else {
        zkl__call_init_fn(&p->call, c, on_pdel_deleted, p);
        rc = zkl__delete(&p->call, p->s, p->path);
      }
      if (rc != ZOK) {
        p->inflight = 0;
        p->done = !zkl__is_conn_error(rc);
      }
    }
    pp = &p->next;
  }
}

void zkl__quiesce(zkl_client_t *c, int64_t until, int pdel) {
  for (;;) {
    struct zkl__pdel *p;
    struct timespec ts;
    int busy = 0;
    if (pdel) {
      for (p = c->pdel; p; p = p->next)
        busy |= p->inflight;
    } else {
      busy = c->sess && c->sess->refs > 1;
    }
    if (!busy || zkl_now_ms() >= until)
      return;
    zkl__deadline_ts(until, &ts);
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
  }
}

void zkl__pdel_release(zkl_client_t *c) {
  struct zkl__pdel *p;
  for (p = c->pdel; p; p = p->next) {
    zkl__session_put(c, p->s);
    p->s = NULL;
  }
}

void zkl__pdel_free_all(zkl_client_t *c) {
  while (c->pdel) {
    struct zkl__pdel *p = c->pdel;
    c->pdel = p->next;
    pdel_destroy(p);
  }
}
