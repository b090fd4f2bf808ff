/* recover.c: the paths of an acquisition that trouble makes necessary.
 *
 * The queue's parents are missing: make them as containers, deepest first.
 * The reply to our create was lost: find our node again by its guid, and
 * adopt it only if this very session owns it. A semaphore's directory data
 * says N: agree on it before holding. Each ends by handing the run back to
 * acquire.c through r->back, which it set before it came here, with a
 * code: this file names no step of the happy path. Steps run as run.c says. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void step_mkdir_done(zkl__acq_t *a);
static void recover_connected(zkl__acq_t *a, int rc);
static void step_recover_list(zkl__acq_t *a);
static void recover_scan(zkl__acq_t *a);
static void step_recover_stat(zkl__acq_t *a);
static void step_agree_set(zkl__acq_t *a);
static void agree_reread(zkl__acq_t *a, int rc);
static void step_agree_read(zkl__acq_t *a);

/* ---- making the queue's parents ------------------------------------------ */

/* How much of q->dir is made here: all of it, but for a flat lock only
 * its parent, for the node is q->dir itself (flat.c). */
static size_t made_len(const zkl__queue_t *q) {
  return (q->flags & ZKL__Q_FLAT) ? (size_t)(strrchr(q->dir, '/') - q->dir)
                                  : strlen(q->dir);
}

/* Creates the missing components of q->dir as container nodes, deepest
 * first: the immediate parent, then, only on ZNONODE, one level up, and
 * back down. Creating a component that exists would need CREATE on its
 * own parent, which the server checks before it answers "exists": on a
 * secured ensemble that is often not ours to have, and asking only for
 * what is missing costs one round trip in the common case. */
void zkl__step_mkdir(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__queue_t *q = a->q;
  /* the queue's own directory carries what its members agree on, and is
   * the one a kazoo flavour keeps (its parents hold it: never empty) */
  int leaf = !(q->flags & ZKL__Q_FLAT) && strlen(r->mk) == strlen(q->dir);
  const char *d = leaf ? q->dir_data : NULL;
  zkl__prep(a, &r->aux);
  zkl__sent(a, &r->aux,
            zkl__create_dir(&r->aux, r->s, r->mk, d, d ? (int)strlen(d) : -1,
                            leaf && (q->flags & ZKL__Q_KEEP_DIR)));
  r->next = step_mkdir_done;
}

#ifdef ZKL_FAULT_INJECTION
_Atomic int zkl__fault_dir_replaced;

static void on_fault_void(int rc, const void *data) { (void)rc, (void)data; }

static void on_fault_made(int rc, const char *v, const void *data) {
  (void)rc, (void)v, (void)data;
}

/* Someone else deletes the directory just made and makes another, with
 * data of theirs, ahead of anything we send next on s. */
static void replace_dir(zkl__session_t *s, const char *dir) {
  (void)zoo_adelete(s->zh, dir, -1, on_fault_void, NULL);
  (void)zoo_acreate(s->zh, dir, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, on_fault_made,
                    NULL);
}
#endif

static void step_mkdir_done(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  size_t len = made_len(a->q);
  int rc = r->aux.rc == ZNODEEXISTS ? ZOK : r->aux.rc;
  if (r->aux.rc == ZOK && strlen(r->mk) == len &&
      !(a->q->flags & ZKL__Q_FLAT)) /* a flat lock's parent is not its dir */
    a->q->dir_made = r->aux.stat.czxid, r->made_dir = 1, a->q->dir_lean = 0;
#ifdef ZKL_FAULT_INJECTION
  if (r->aux.rc == ZOK && strlen(r->mk) == len &&
      atomic_exchange(&zkl__fault_dir_replaced, 0))
    replace_dir(r->s, r->mk);
#endif
  /* A lock's directory is there now, made or found: the join again lists
   * with its create, whose parent's czxid tells whether our node is alone
   * in the one we made. Unlisted (acquire.c first_born), it would take
   * the directory our node is first in for the one made here, which may
   * have been deleted since and another made in its place, by anyone
   * (model/leanparent.pml, F11). */
  if (rc == ZOK && strlen(r->mk) == len && !a->q->dir_data &&
      !(a->q->flags & (ZKL__Q_FLAT | ZKL__Q_KEEP_DIR)))
    a->q->dir_seen = 1;
  zkl__call_free(&r->aux);
  if (rc == ZNONODE && strchr(r->mk + 1, '/')) {
    *strrchr(r->mk, '/') = '\0'; /* its parent first */
    r->next = zkl__step_mkdir;
    return;
  }
  if (rc == ZOK && strlen(r->mk) != len) {
    r->mk[strlen(r->mk)] = '/'; /* one level back down */
    r->next = zkl__step_mkdir;
    return;
  }
  free(r->mk);
  r->mk = NULL;
  zkl__session_put(a->q->c, r->s);
  r->s = NULL;
  a->run->back(a, rc == ZOK ? ZKL__REJOIN
                      : zkl__is_conn_error(rc) || zkl__is_session_error(rc)
                          ? ZKL__RETRY
                          : rc);
}

/* ---- recovering a create whose reply was lost ---------------------------- */

/* The reply to our create was lost. Find our node again by its guid, and
 * adopt it only if its ephemeral owner is this very session: a node left by
 * an expired session must never be taken for ours. Every name with our
 * guid is read: anyone may copy our name, and a copy must not hide our
 * node, which would then block the queue, us included (model/, F4).
 * `epoch` 0 lists at once if connected (the create failed with the
 * connection up, for want of memory: no reconnection is coming, F3). */
void zkl__recover(zkl__acq_t *a, uint64_t epoch) {
  zkl__await_conn(a, a->run->s, epoch, recover_connected);
}

/* The recovery gave up: whatever we made must not outlive it. */
static void recover_failed(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  if (rc != ZKL__RETRY)
    zkl__defer_find_delete(c, r->s, a->q->dir, a->guid);
  zkl__session_put(c, r->s);
  r->s = NULL;
  a->run->back(a, rc);
}

static void recover_connected(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  zkl_client_t *c = a->q->c;
  if (rc == ZKL_OK && c->sess != r->s) {
    /* expired: whatever we made died with it */
    recover_failed(a, ZKL__RETRY);
    return;
  }
  if (rc != ZKL_OK || (rc = zkl__stopped_strict(r)) != ZKL_OK) {
    recover_failed(a, rc);
    return;
  }
  r->repoch = c->conn_epoch;
  zkl__prep(a, &r->sy);
  zkl__prep(a, &r->ls);
  /* sync first: the server we read from has then seen every write the
   * leader committed before it, our create included if it happened. */
  zkl__sent(a, &r->sy, zkl__sync(&r->sy, r->s, a->q->dir));
  zkl__sent(a, &r->ls, zkl__children(&r->ls, r->s, a->q->dir));
  r->rec_i = 0;
  r->next = step_recover_list;
}

static void recover_result(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  zkl__call_free(&r->ls);
  r->ls.rc = ZCONNECTIONLOSS;
  if (zkl__is_conn_error(rc)) {
    zkl__recover(a, r->repoch);
    return;
  }
  if (rc == ZKL_ENOMEM)
    zkl__defer_find_delete(a->q->c, r->s, a->q->dir, a->guid);
  zkl__session_put(a->q->c, r->s);
  r->s = NULL;
  a->run->back(a, rc == ZNONODE || zkl__is_session_error(rc) ? ZKL__RETRY
                                                                 : rc);
}

static void step_recover_list(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__call_free(&r->sy);
  if (r->ls.rc != ZOK)
    recover_result(a, r->ls.rc);
  else
    recover_scan(a);
}

static void recover_scan(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  for (; r->rec_i < r->ls.kids.count; r->rec_i++) {
    const char *name = r->ls.kids.data[r->rec_i];
    if (!strstr(name, a->guid))
      continue;
    r->rec_i++;
    if (!(r->rec_path = zkl__concat(a->q->prefix, name))) {
      recover_result(a, ZKL_ENOMEM);
      return;
    }
    zkl__prep(a, &r->aux);
    zkl__sent(a, &r->aux, zkl__exists(&r->aux, r->s, r->rec_path));
    r->next = step_recover_stat;
    return;
  }
  recover_result(a, ZKL__RETRY);
}

/* Reads the node found with our guid, and adopts it if its owner is this
 * very session. */
static void step_recover_stat(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__session_t *s = r->s;
  int rc = r->aux.rc;
  if (rc == ZOK && r->aux.stat.ephemeralOwner == s->id && !s->expired) {
    zkl__adopt(a, r->rec_path, &r->aux.stat);
    r->rec_path = NULL;
    zkl__call_free(&r->ls);
    r->ls.rc = ZCONNECTIONLOSS;
    a->run->back(a, ZKL_OK);
    return;
  }
  free(r->rec_path);
  r->rec_path = NULL;
  if (rc == ZOK || rc == ZNONODE)
    recover_scan(a); /* gone, or not ours: the next one */
  else
    recover_result(a, rc);
}

/* ---- the queue's directory data ------------------------------------------ */

/* How many times the agreement reads and writes the directory before
 * giving up on a directory whose data keeps changing under it. */
#define AGREE_TRIES 8

/* Agreeing on N. Members that disagree on a semaphore's number of leases
 * would admit more than some of them allow; members that each defer to
 * the other would admit nobody (issue 34). One rule decides, the same for
 * every member: the directory's data, "max=N" (q->dir_data), says the
 * semaphore's N, and a member made with another N is refused
 * (ZKL_EMISMATCH, its node deleted). The first member to make the
 * directory writes its N in the create; a directory without data (made by
 * another recipe, an older version or an operator), or with only another
 * recipe's mark (ZKL__DIR_MARK), gets the N of whoever's conditional
 * write lands first. Nothing else refuses a member: the leases before
 * ours never do.
 *
 * What keeps leases of two N apart is their names, not this: each lease's
 * name carries its N, and policy.c counts a lease of another N before
 * ours as a node of another kind, which we wait behind as a lease waits
 * behind a lock. So a member of the directory's N waits for the node of
 * a refused member before it to go (a round trip, its delete), and never
 * holds beside a lease of another N, whatever the directory said to
 * anyone at any time. A rewrite of the data (anyone allowed can write it)
 * thus takes effect at once for members judged after it: the old N's are
 * refused, the new N's wait until every lease of the old N before theirs
 * is gone. Holders keep their leases: nothing breaks under them.
 *
 * Each member judges the directory as it was after its own node was made:
 * by the listing's stat (incarnation and data version) when this object
 * agreed with that stamp before, or by a read of it, which zkl__joined()
 * makes again if the one sent before our create is not of the listing's
 * stamp, or if no listing came to tell. The directory is read once per
 * incarnation and data version, so the uncontended path reads nothing
 * more. Leases whose names carry no N (an older version's) count as ours,
 * as those versions count ours: they are judged by the directory alone.
 *
 * r->gd is the read of the directory; any other code than ZOK means read
 * it again. Ends with ZKL_OK, ZKL_EMISMATCH, ZKL__RETRY, or an error. */
void zkl__step_agree(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__queue_t *q = a->q;
  zkl_client_t *c = q->c;
  zkl__call_t *gd = &r->gd;
  const char *want = q->dir_data;
  size_t wl = strlen(want);
  if (r->tries++ >= AGREE_TRIES) {
    a->run->back(a, ZKL_EPROTO);
    return;
  }
  r->repoch = c->conn_epoch;
  /* another recipe's mark says no N: as no data at all */
  if (gd->rc == ZOK && gd->data_len > 0 &&
      !zkl__dir_marked(gd->data, gd->data_len)) {
    if ((size_t)gd->data_len == wl && memcmp(gd->data, want, wl) == 0) {
      r->agreed = 1;
      q->dir_czxid = gd->stat.czxid;
      q->dir_version = gd->stat.version;
      a->run->back(a, ZKL_OK);
      return;
    }
    q->dir_czxid = 0; /* not ours: read it with every join */
    zkl__post_log(c, ZKL_LOG_ERROR,
                  "%s: its members were made with \"%.*s\", this one "
                  "with \"%s\": refusing to join",
                  q->dir, gd->data_len > 64 ? 64 : gd->data_len, gd->data,
                  want);
    a->run->back(a, ZKL_EMISMATCH);
    return;
  }
  if (gd->rc != ZOK && gd->rc != ZNONODE && !zkl__is_conn_error(gd->rc)) {
    a->run->back(a, zkl__is_session_error(gd->rc) ? ZKL__RETRY : gd->rc);
    return;
  }
  if (!a->sess || a->session_lost) {
    a->run->back(a, ZKL__RETRY);
    return;
  }
  r->rs = a->sess;
  r->rs->refs++;
  if (gd->rc == ZOK) { /* no data yet: ours, unless someone was first */
    zkl__prep(a, &r->aux);
    zkl__sent(
        a, &r->aux,
        zkl__set(&r->aux, r->rs, q->dir, want, (int)wl, gd->stat.version));
    r->next = step_agree_set;
    return;
  }
  agree_reread(a, ZKL_OK);
}

static void step_agree_set(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  int rc = r->aux.rc;
  zkl__call_free(&r->aux);
  if (rc == ZOK) {
    zkl__session_put(a->q->c, r->rs);
    r->rs = NULL;
    r->agreed = 1;
    a->q->dir_czxid = r->gd.stat.czxid;
    a->q->dir_version = r->gd.stat.version + 1; /* our conditional write */
    a->run->back(a, ZKL_OK);
    return;
  }
  agree_reread(a, rc);
}

static void agree_reread(zkl__acq_t *a, int rc) {
  zkl__run_t *r = a->run;
  zkl__call_free(&r->gd);
  zkl__prep(a, &r->gd);
  if (rc == ZOK || rc == ZBADVERSION)
    zkl__sent(a, &r->gd, zkl__get(&r->gd, r->rs, a->q->dir, 0));
  else
    r->gd.rc = rc;
  r->next = step_agree_read;
}

static void agree_reconnected(zkl__acq_t *a, int rc) {
  if (rc != ZKL_OK)
    a->run->back(a, rc);
  else
    a->run->next = zkl__step_agree;
}

static void step_agree_read(zkl__acq_t *a) {
  zkl__run_t *r = a->run;
  zkl__session_t *s = r->rs;
  zkl__session_put(a->q->c, s);
  r->rs = NULL;
  if (zkl__is_conn_error(r->gd.rc))
    zkl__await_conn(a, s, r->repoch, agree_reconnected);
  else
    r->next = zkl__step_agree;
}
