/* SPDX-License-Identifier: Apache-2.0 */
/* node.c: our node: how it is made, and how we know a node is ours.
 *
 * Every path that makes a lock node, adopts one, waits behind one or
 * deletes one asks here (as Curator's createsTheLock and getsTheLock):
 * - made: ephemeral, sequential for a queue, at the lock's own name for a
 *   flat lock (with the client's own ACL: release.c's guard needs it);
 * - ours: made by us (its czxid is the one our create gave) and owned by
 *   the session we made it on; a node someone made again at our name,
 *   under our session's owner even, fails the czxid;
 * - made by this session: after a lost reply the node found by our guid
 *   is adopted only if this very session owns it;
 * - lasting: not ephemeral, so it never goes by itself (planted, or a
 *   directory): nobody waits behind it;
 * - its guard: what the release's transaction checks instead of a read
 *   (release.c says why each holds). */
#include "config.h"

#include "internal.h"

int zkl__node_mode(const zkl__queue_t *q) {
  return q->flags & ZKL__Q_FLAT ? ZOO_EPHEMERAL : ZOO_EPHEMERAL_SEQUENTIAL;
}

int zkl__owns_on(const zkl__acq_t *a, const zkl__session_t *s,
                 const struct Stat *st) {
  return s && st->czxid == a->czxid && st->ephemeralOwner == s->id;
}

int zkl__owns(const zkl__acq_t *a, const struct Stat *st) {
  return zkl__owns_on(a, a->sess, st);
}

int zkl__node_made_by(const zkl__session_t *s, const struct Stat *st) {
  return s && !s->expired && st->ephemeralOwner == s->id;
}

int zkl__node_lasting(const struct Stat *st) { return st->ephemeralOwner == 0; }

int zkl__node_guard(const zkl__acq_t *a) {
  if (a->dversion < 1)
    return ZKL__GUARD_NONE;
  return a->q->flags & ZKL__Q_FLAT ? ZKL__GUARD_SET : ZKL__GUARD_CHECK;
}
