/* deferred.c: nodes of ours to delete once connected again.
 *
 * A delete that could not reach the server, a hold declared LOST while
 * disconnected, or a create whose reply was lost leaves a node that may
 * still exist on a live session and would block its queue. Each is
 * recorded here, by path or (for the lost create) by the guid in its
 * name, and the client's event thread finishes it when the session is
 * connected: it lists the directory for the guid if need be, reads each
 * candidate, and deletes only one whose ephemeral owner is our session.
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
  zkl__session_t *s;
  char *path;  /* the candidate being read or deleted; NULL: find by guid */
  char *dir;   /* by guid: the directory to list */
  char guid[ZKL__GUID_LEN + 1];
  char **cand; /* by guid: the other names found with our guid, as paths */
  int ncand;
  int listed;
  int mine;    /* path was read: ours */
  int inflight;
  int done;
  struct zkl__pdel *next;
};

static void defer(zkl_client_t *c, zkl__session_t *s, const char *path,
                  const char *dir, const char *guid) {
  struct zkl__pdel *p = calloc(1, sizeof *p);
  if (!p)
    return; /* the node still goes when the session ends */
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
}

void zkl__defer_delete(zkl_client_t *c, zkl__session_t *s, const char *path) {
  zkl__post_log(c, ZKL_LOG_INFO, "%s: will be deleted once connected", path);
  defer(c, s, path, NULL, NULL);
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

static void on_pdel_deleted(int rc, const void *data) {
  struct zkl__pdel *p = (struct zkl__pdel *)data;
  zkl_client_t *c = p->c;
  pthread_mutex_lock(&c->mu);
  p->inflight = 0;
  if (zkl__is_conn_error(rc))
    p->mine = 0; /* read it again: the delete may have landed */
  else
    p->done = 1; /* deleted, already gone, or the session is over */
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void on_pdel_read(int rc, const struct Stat *st, const void *data) {
  struct zkl__pdel *p = (struct zkl__pdel *)data;
  zkl_client_t *c = p->c;
  pthread_mutex_lock(&c->mu);
  p->inflight = 0;
  if (rc == ZOK && st && st->ephemeralOwner == p->s->id) {
    p->mine = 1;
  } else if (rc == ZOK || rc == ZNONODE) {
    if (rc == ZOK)
      zkl__post_log(c, ZKL_LOG_WARN, "%s: not ours (owner 0x%llx), left alone",
                    p->path, (unsigned long long)(st ? st->ephemeralOwner : 0));
    next_candidate(p);
  } else if (!zkl__is_conn_error(rc)) {
    p->done = 1;
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void on_pdel_listed(int rc, const struct String_vector *v,
                           const void *data) {
  struct zkl__pdel *p = (struct zkl__pdel *)data;
  zkl_client_t *c = p->c;
  int i;
  pthread_mutex_lock(&c->mu);
  p->inflight = 0;
  if (rc == ZOK) {
    char *slash = zkl__join(p->dir, "/");
    p->listed = 1;
    p->cand = v && v->count > 0 ? calloc((size_t)v->count, sizeof *p->cand)
                                : NULL;
    for (i = 0; slash && p->cand && i < v->count; i++)
      if (strstr(v->data[i], p->guid) &&
          (p->cand[p->ncand] = zkl__join(slash, v->data[i])))
        p->ncand++;
    free(slash);
    next_candidate(p);
  } else if (!zkl__is_conn_error(rc)) {
    p->done = 1;
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
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
      atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
      if (!p->listed)
        rc = zoo_aget_children(p->s->zh, p->dir, 0, on_pdel_listed, p);
      else if (!p->mine)
        rc = zoo_aexists(p->s->zh, p->path, 0, on_pdel_read, p);
      else
        rc = zoo_adelete(p->s->zh, p->path, -1, on_pdel_deleted, p);
      if (rc != ZOK) {
        p->inflight = 0;
        p->done = !zkl__is_conn_error(rc);
      }
    }
    pp = &p->next;
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
