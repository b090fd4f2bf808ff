/* policy.c: who holds and whom to watch, from the names in a listing.
 *
 * Pure functions over a queue's child names, so that they can be tested
 * (tests/unit.c) and fuzzed (fuzz/fuzz_names.c) without an ensemble. Any
 * client of the ensemble can create children under a lock, so every name
 * here is untrusted input. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A contender's node name ends with <marker><seq>, where the server printed
 * seq with %010d: 10 digits, or after the parent's signed 32-bit counter
 * wraps, '-' and 9 or 10 digits. Other children are not contenders and are
 * ignored. */
int zkl__seq_parse(const char *node, const char *marker, int32_t *seq) {
  size_t m = strlen(marker), n;
  const char *s = NULL, *p;
  int64_t v = 0;
  int neg = 0;
  for (p = strstr(node, marker); p; p = strstr(p + 1, marker))
    s = p + m; /* the last occurrence: a guid may not contain it, but be safe */
  if (!s)
    return 0;
  n = strlen(s);
  if (*s == '-') {
    neg = 1;
    s++;
    n--;
    if (n != 9 && n != 10)
      return 0;
  } else if (n != ZKL__SEQ_LEN) {
    return 0;
  }
  for (p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    v = v * 10 + (*p - '0');
  }
  v = neg ? -v : v;
  if (v < INT32_MIN || v > INT32_MAX)
    return 0;
  *seq = (int32_t)v;
  return 1;
}

/* Serial-number order (RFC 1982 style) on the 32-bit counter: a is before b
 * when b is less than 2^31 steps ahead of a. Contenders that really queued
 * together are never 2^31 apart, so among them this is a total order that
 * stays right across the wrap to negative values, where comparing the
 * printed strings would put the newcomer first. It is not transitive over
 * arbitrary numbers, which anyone can plant as names: hence no sort below. */
int zkl__seq_before(int32_t a, int32_t b) {
  return (int32_t)((uint32_t)a - (uint32_t)b) < 0;
}

/* The markers other libraries' lock recipes put before the sequence, and
 * zklock's own: what kind of contender a node is. Anything else that ends
 * in a sequence is a contender of a kind this version does not know, and
 * counts as exclusive, so that mixing recipes, libraries or versions on one
 * name never admits two holders. */
static const struct {
  const char *marker;
  int kind;
} kinds[] = {
    {"-lock-", ZKL__KIND_EXCL},      /* zklock's mutex; Curator's mutex */
    {"-elect-", ZKL__KIND_EXCL},     /* zklock's election */
    {"__lock__", ZKL__KIND_EXCL},    /* kazoo's Lock and WriteLock */
    {"__rlock__", ZKL__KIND_SHARED}, /* kazoo's ReadLock */
    /* Curator's read-write lock, and zklock's (zkl_rwlock_t) */
    {"__WRIT__", ZKL__KIND_EXCL | ZKL__KIND_LOWERS},
    {"__READ__", ZKL__KIND_SHARED},
    /* zklock's semaphore: exclusive to every other kind */
    {"-lease-", ZKL__KIND_EXCL | ZKL__KIND_LEASE},
};

/* The kind of a node whose name, up to len, ends with a known marker;
 * -1 if none does. */
static int known(const char *node, size_t len) {
  size_t i, m;
  for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    m = strlen(kinds[i].marker);
    if (len >= m && memcmp(node + len - m, kinds[i].marker, m) == 0)
      return kinds[i].kind;
  }
  return -1;
}

/* Whether the name, up to len, is a guid of zkl__guid() followed by a
 * known marker and nothing else: a node zklock made. */
static int ours(const char *node, size_t len) {
  size_t i, m;
  for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    m = strlen(kinds[i].marker);
    if (len == ZKL__GUID_LEN + m &&
        memcmp(node + ZKL__GUID_LEN, kinds[i].marker, m) == 0)
      break;
  }
  if (i == sizeof kinds / sizeof kinds[0])
    return 0;
  for (i = 0; i < ZKL__GUID_LEN; i++)
    if (!((node[i] >= '0' && node[i] <= '9') ||
          (node[i] >= 'a' && node[i] <= 'f')))
      return 0;
  return 1;
}

/* Whether s is a sequence as the server prints it: 10 digits, or '-' and
 * 9 or 10 digits after the counter wraps. */
static int seq_text(const char *s) {
  size_t n, i;
  int neg = *s == '-';
  s += neg;
  n = strlen(s);
  if (n != ZKL__SEQ_LEN && !(neg && n == ZKL__SEQ_LEN - 1))
    return 0;
  for (i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return 0;
  return 1;
}

/* A child that is not <guid><marker><seq> with one of the queue's own
 * markers. kazoo names its nodes <uuid4 hex>__lock__<seq>, exactly as
 * zklock's kazoo flavour does, so a kazoo flavour cannot tell kazoo's
 * nodes from ours; it never deletes its parent anyway. */
int zkl__name_foreign(const char *node, const char *marker,
                      const char *marker_shared) {
  const char *ms[2] = {marker, marker_shared};
  size_t i, m, hex = ZKL__GUID_LEN;
  if (strlen(node) <= ZKL__GUID_LEN)
    return 1;
  /* a multi-lock's guid ends in its tag */
  if (memcmp(node + ZKL__GUID_LEN - ZKL__ML_TAG_LEN, ZKL__ML_TAG,
             ZKL__ML_TAG_LEN) == 0)
    hex -= ZKL__ML_TAG_LEN;
  for (i = 0; i < hex; i++)
    if (!((node[i] >= '0' && node[i] <= '9') ||
          (node[i] >= 'a' && node[i] <= 'f')))
      return 1;
  for (i = 0; i < 2; i++) {
    if (!ms[i])
      continue;
    m = strlen(ms[i]);
    if (strncmp(node + ZKL__GUID_LEN, ms[i], m) == 0 &&
        seq_text(node + ZKL__GUID_LEN + m))
      return 0;
  }
  return 1;
}

static int64_t digits(const char *s, size_t len) {
  int64_t v = 0;
  while (len--)
    v = v * 10 + (*s++ - '0');
  return v;
}

/* Any contender, whatever its client: the server appended %010d of the
 * parent's counter to the prefix the client chose, so the name ends in 10
 * digits, or after the wrap in '-' and 9 or 10 digits. A '-' before 10
 * digits is a sign when the marker ends just before it, or when the value
 * cannot be positive; for a prefix of unknown kind ending in '-' the two
 * readings can differ (values of 10 digits that fit either way, just
 * after the wrap), and the positive one is taken. A known marker followed
 * by 9 digits is no name the server makes. */
int zkl__name_parse(const char *node, int32_t *seq, int *kind) {
  size_t n = strlen(node), t = 0, end;
  int64_t v;
  int neg = 0, k;
  while (t < n && node[n - 1 - t] >= '0' && node[n - 1 - t] <= '9')
    t++;
  if (t >= 10) {
    v = digits(node + n - 10, 10);
    end = n - 10;
    if (t == 10 && end > 0 && node[end - 1] == '-' &&
        (known(node, end - 1) >= 0 ||
         (known(node, end) < 0 && v > INT32_MAX))) {
      neg = 1;
      end--;
    }
  } else if (t == 9 && n > 9 && node[n - 10] == '-' && known(node, n - 9) < 0) {
    v = digits(node + n - 9, 9);
    neg = 1;
    end = n - 10;
  } else {
    return 0;
  }
  if (neg)
    v = -v;
  if (v < INT32_MIN || v > INT32_MAX)
    return 0;
  k = known(node, end);
  /* zklock's own read-write writers carry Curator's marker but never
   * downgrade by adding a node: their prefix is exactly our guid. */
  if (k >= 0 && (k & ZKL__KIND_LOWERS) && ours(node, end))
    k &= ~ZKL__KIND_LOWERS;
  *seq = (int32_t)v;
  *kind = k < 0 ? ZKL__KIND_EXCL : k;
  return 1;
}

int zkl__contenders(char *const *names, int n, zkl__entry_t **out) {
  zkl__entry_t *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e);
  int i, k = 0;
  if (!e)
    return -1;
  for (i = 0; i < n; i++)
    if (zkl__name_parse(names[i], &e[k].seq, &e[k].kind))
      e[k++].name = names[i];
  *out = e;
  return k;
}

/* Equal sequences happen only with planted names; the name then decides,
 * so that two distinct entries are never both before each other. */
static int before(const zkl__entry_t *a, const zkl__entry_t *b) {
  if (a->seq != b->seq)
    return zkl__seq_before(a->seq, b->seq);
  return strcmp(a->name, b->name) < 0;
}

/* How far below `me` entry x lies: smaller is nearer. */
static int nearer(const zkl__entry_t *x, const zkl__entry_t *y,
                  const zkl__entry_t *me) {
  uint32_t dx = (uint32_t)me->seq - (uint32_t)x->seq;
  uint32_t dy = (uint32_t)me->seq - (uint32_t)y->seq;
  if (dx != dy)
    return dx < dy;
  return strcmp(x->name, y->name) > 0;
}

/* Whether a node before e[me] may later put a node below e[me], which
 * makes a predecessor's deletion prove nothing by itself: Curator's
 * read-write lock, since CURATOR-621, downgrades by creating a read node
 * that carries its writer's sequence. */
int zkl__may_insert_below(const zkl__entry_t *e, int n, int me,
                          const unsigned char *skip) {
  int i;
  for (i = 0; i < n; i++)
    if (i != me && !(skip && skip[i]) && (e[i].kind & ZKL__KIND_LOWERS) &&
        before(&e[i], &e[me]))
      return 1;
  return 0;
}

int zkl__any_after(const zkl__entry_t *e, int n, int me,
                   const unsigned char *skip) {
  int i;
  for (i = 0; i < n; i++)
    if (i != me && !(skip && skip[i]) && before(&e[me], &e[i]))
      return 1;
  return 0;
}

/* Decided from e[me]'s own point of view, one pair at a time: two real
 * contenders each see the other on the same side, so at most one of them
 * sees nothing before itself, whatever else a listing holds. */
int zkl__place(const zkl__entry_t *e, int n, int me, const unsigned char *skip,
               int *pred) {
  int i, count = 0, best = -1;
  for (i = 0; i < n; i++) {
    if (i == me || (skip && skip[i]) || !before(&e[i], &e[me]))
      continue;
    count++;
    if (best < 0 || nearer(&e[i], &e[best], &e[me]))
      best = i;
  }
  if (pred)
    *pred = best;
  return count;
}

/* Exclusive nodes conflict with every node, shared ones only with
 * exclusive ones. */
static int conflicts(int a, int b) {
  return (a & ZKL__KIND_EXCL) || (b & ZKL__KIND_EXCL);
}

/* Adds to p->watch the entries before e[me] that `want` accepts, nearest
 * first, as many as fit. */
static void watch_nearest(const zkl__entry_t *e, int n, int me,
                          const unsigned char *skip, int (*want)(int kind),
                          zkl__plan_t *p) {
  int i, j;
  while (p->nwatch < ZKL__WATCH_MAX) {
    int next = -1;
    for (i = 0; i < n; i++) {
      if (i == me || (skip && skip[i]) || !before(&e[i], &e[me]) ||
          !want(e[i].kind))
        continue;
      for (j = 0; j < p->nwatch && p->watch[j] != i; j++)
        ;
      if (j == p->nwatch && (next < 0 || nearer(&e[i], &e[next], &e[me])))
        next = i;
    }
    if (next < 0)
      return;
    p->watch[p->nwatch++] = next;
  }
}

static int any_kind(int kind) { return kind != 0; }
static int lease_kind(int kind) { return (kind & ZKL__KIND_LEASE) != 0; }

/* Whether e[i] is a lease of our semaphore of `limit` leases: its name
 * carries our N, or none (an older version's, counted as ours, as that
 * version counts ours). */
static int our_lease(const zkl__entry_t *x, int limit) {
  int v;
  if (!(x->kind & ZKL__KIND_LEASE))
    return 0;
  v = zkl__lease_limit(x->name);
  return v == 0 || v == limit;
}

/* A lease of a semaphore of `limit` leases holds while fewer than `limit`
 * leases, and no node of another kind, are before it. A lease whose name
 * carries another N is of another kind: leases of two N exclude each
 * other as a lock and a lease do, the first to come holding first, so
 * they are never granted together whatever anyone writes anywhere
 * (which N may join at all is the directory's max=N: recover.c). The
 * first waiter (exactly `limit` leases before it) watches them all, and
 * the first deletion proves it holds. A later waiter watches its
 * predecessor, and relists when it goes or is marked held (the relay: see
 * release.c), or, if that is a lease of ours, after a while in case the
 * mark was never written. */
static void decide_lease(const zkl__entry_t *e, int n, int me,
                         const unsigned char *skip, int limit,
                         zkl__plan_t *p) {
  int i, leases = 0, others = 0, nearest = -1;
  for (i = 0; i < n; i++) {
    if (i == me || (skip && skip[i]) || !before(&e[i], &e[me]))
      continue;
    if (our_lease(&e[i], limit))
      leases++;
    else
      others++;
    if (nearest < 0 || nearer(&e[i], &e[nearest], &e[me]))
      nearest = i;
  }
  p->before = others + (leases >= limit ? leases - limit + 1 : 0);
  if (!p->before)
    return;
  if (!others && leases == limit && limit <= ZKL__WATCH_MAX) {
    watch_nearest(e, n, me, skip, lease_kind, p);
    p->any = 1;
    p->handoff = !zkl__may_insert_below(e, n, me, skip);
    return;
  }
  p->watch[p->nwatch++] = nearest;
  p->relist_on_change = 1;
  /* a lease of ours marks its node when granted (the relay), and the mark
   * may be lost: poll. Anything else only goes. */
  p->poll = our_lease(&e[nearest], limit);
}

/* A zklock lease's name says its semaphore's N right before the marker:
 * <guid>-n<N>-lease-<seq>. Before the marker, not after it, so that every
 * parser, older versions' included, still finds "-lease-" before the
 * sequence and counts the node as a lease. The name is the one thing of a
 * contender nobody can change, and every member lists the queue after its
 * create anyway: it costs no read. 0: the name does not say (a lease of
 * an older version, or anything else). */
int zkl__lease_limit(const char *node) {
  const char *m = NULL, *p, *d;
  long v = 0;
  for (p = strstr(node, "-lease-"); p; p = strstr(p + 1, "-lease-"))
    m = p; /* the last: only the sequence follows it */
  if (!m)
    return 0;
  for (d = m; d > node && d[-1] >= '0' && d[-1] <= '9'; d--)
    ;
  if (d == m || m - d > 5 || *d == '0' || d - node < 2 || d[-1] != 'n' ||
      d[-2] != '-')
    return 0;
  for (p = d; p < m; p++)
    v = v * 10 + (*p - '0');
  return v <= ZKL_LEASES_MAX ? (int)v : 0;
}

/* Sound for the mutex's reason: no node lower than ours appears after our
 * listing (unless one before us may add one: zkl__may_insert_below), so
 * the set of conflicting nodes before us can only shrink. Hence a watched
 * set that holds every one of them proves, once gone, that we hold. */
void zkl__decide(const zkl__entry_t *e, int n, int me,
                 const unsigned char *skip, int limit, zkl__plan_t *p) {
  int i, nearest = -1, all_shared = 1;
  memset(p, 0, sizeof *p);
  if (limit > 0 && (e[me].kind & ZKL__KIND_LEASE)) {
    decide_lease(e, n, me, skip, limit, p);
    return;
  }
  for (i = 0; i < n; i++) {
    if (i == me || (skip && skip[i]) || !before(&e[i], &e[me]) ||
        !conflicts(e[i].kind, e[me].kind))
      continue;
    p->before++;
    all_shared &= !(e[i].kind & ZKL__KIND_EXCL);
    if (nearest < 0 || nearer(&e[i], &e[nearest], &e[me]))
      nearest = i;
  }
  if (!p->before)
    return;
  /* A writer behind a group of readers only: watch them all at once, the
   * nearest first, as many as fit. */
  if (p->before > 1 && all_shared && (e[me].kind & ZKL__KIND_EXCL))
    watch_nearest(e, n, me, skip, any_kind, p);
  else
    p->watch[p->nwatch++] = nearest;
  p->handoff = p->nwatch == p->before && !zkl__may_insert_below(e, n, me, skip);
  /* A reader behind one writer only: once that writer holds and has
   * downgraded to read (its data says so), it no longer conflicts. */
  p->downgrade_ok = p->handoff && p->before == 1 &&
                    !(e[me].kind & ZKL__KIND_EXCL);
}

