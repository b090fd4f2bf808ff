/* SPDX-License-Identifier: Apache-2.0 */
/* unit.c: pure functions, no server needed. */
#include <stdlib.h>
#include <unistd.h>

#include "../lib/internal.h"

#include "check.h"

static void test_seq_parse(void) {
  int32_t s = 0;
  CHECK(zkl__seq_parse("abc-lock-0000000042", "-lock-", &s));
  CHECK_INT(s, ==, 42);
  CHECK(zkl__seq_parse("g-lock-2147483647", "-lock-", &s));
  CHECK_INT(s, ==, 2147483647);
  /* after the parent's signed 32-bit counter wraps, %010d prints this */
  CHECK(zkl__seq_parse("g-lock--000000005", "-lock-", &s));
  CHECK_INT(s, ==, -5);
  CHECK(zkl__seq_parse("g-lock--2147483648", "-lock-", &s));
  CHECK_INT(s, ==, -2147483647 - 1);
  CHECK(!zkl__seq_parse("g-lock--2147483649", "-lock-", &s));
  CHECK(!zkl__seq_parse("g-lock-12147483647", "-lock-", &s));
  CHECK(zkl__seq_parse("_c_9f-lock-0000000007", "-lock-", &s));
  CHECK_INT(s, ==, 7);
  CHECK(!zkl__seq_parse("g-read-0000000042", "-lock-", &s));
  CHECK(!zkl__seq_parse("g-lock-00000000x2", "-lock-", &s));
  CHECK(!zkl__seq_parse("g-lock-42", "-lock-", &s));
  CHECK(!zkl__seq_parse("", "-lock-", &s));
}

/* Every library's contender is one: kazoo's, Curator's and zklock's
 * markers give the kind; an unknown one counts as exclusive. */
static void test_name_parse(void) {
  int32_t s = 0;
  int k = 0;
  CHECK(zkl__name_parse("abc-lock-0000000042", &s, &k));
  CHECK_INT(s, ==, 42);
  CHECK_INT(k, ==, ZKL__KIND_EXCL);
  CHECK(zkl__name_parse("g-lock--000000005", &s, &k));
  CHECK_INT(s, ==, -5);
  CHECK(zkl__name_parse("g-lock--2147483648", &s, &k));
  CHECK_INT(s, ==, -2147483647 - 1);
  CHECK_INT(k, ==, ZKL__KIND_EXCL);
  CHECK(zkl__name_parse("g-lock-2147483647", &s, &k));
  CHECK_INT(s, ==, 2147483647);
  CHECK(zkl__name_parse("g-lock--1500000000", &s, &k)); /* sign: known marker */
  CHECK_INT(s, ==, -1500000000);
  CHECK(zkl__name_parse("_c_9f1e-lock-0000000007", &s, &k)); /* Curator */
  CHECK_INT(s, ==, 7);
  CHECK(zkl__name_parse("9f1e__lock__0000000003", &s, &k)); /* kazoo */
  CHECK_INT(s, ==, 3);
  CHECK_INT(k, ==, ZKL__KIND_EXCL);
  CHECK(zkl__name_parse("9f1e__rlock__0000000004", &s, &k));
  CHECK_INT(k, ==, ZKL__KIND_SHARED);
  CHECK(zkl__name_parse("9f1e__lock__-2147483648", &s, &k));
  CHECK_INT(s, ==, -2147483647 - 1);
  CHECK(zkl__name_parse("_c_9f-__READ__0000000011", &s, &k));
  CHECK_INT(k, ==, ZKL__KIND_SHARED);
  CHECK(zkl__name_parse("_c_9f-__WRIT__0000000012", &s, &k));
  CHECK_INT(k, ==, ZKL__KIND_EXCL | ZKL__KIND_LOWERS);
  CHECK(zkl__name_parse("x-elect-0000000001", &s, &k));
  /* unknown kinds: exclusive; a '-' before 10 digits that fit either
   * way is not a sign, one before 9 digits or a value too big is */
  CHECK(zkl__name_parse("latch-0000000009", &s, &k));
  CHECK_INT(s, ==, 9);
  CHECK_INT(k, ==, ZKL__KIND_EXCL);
  CHECK(zkl__name_parse("node0000000010", &s, &k));
  CHECK_INT(s, ==, 10);
  CHECK(zkl__name_parse("w-1500000000", &s, &k));
  CHECK_INT(s, ==, 1500000000);
  CHECK(zkl__name_parse("w-2147483648", &s, &k));
  CHECK_INT(s, ==, -2147483647 - 1);
  CHECK(zkl__name_parse("w--000000005", &s, &k));
  CHECK_INT(s, ==, -5);
  CHECK(zkl__name_parse("0000000001", &s, &k));
  CHECK(zkl__name_parse("n12147483647", &s, &k)); /* the last 10 digits */
  CHECK_INT(s, ==, 2147483647);
  CHECK(!zkl__name_parse("w-2147483649", &s, &k));
  CHECK(!zkl__name_parse("n2147483648", &s, &k));
  CHECK(!zkl__name_parse("g-lock-42", &s, &k));
  CHECK(!zkl__name_parse("g-lock-000000042", &s, &k)); /* 9 digits, no sign */
  CHECK(!zkl__name_parse("other-node", &s, &k));
  CHECK(!zkl__name_parse("", &s, &k));
}

/* A Curator read-write writer before us may downgrade by creating a read
 * node with its own (lower) sequence: no zero-read hand-off behind it. */
/* Whose node a child is, from its name alone (queue.c keeps a parent
 * that another library's node was seen in). */
static void test_name_foreign(void) {
  static const char g[] = "0123456789abcdef0123456789abcdef";
  char n[128];
  snprintf(n, sizeof n, "%s-lock-0000000042", g);
  CHECK(!zkl__name_foreign(n, "-lock-", NULL));
  CHECK(zkl__name_foreign(n, "__lock__", NULL)); /* another flavour */
  snprintf(n, sizeof n, "%s-lock--000000042", g); /* after the wrap */
  CHECK(!zkl__name_foreign(n, "-lock-", NULL));
  snprintf(n, sizeof n, "%s-lock-000000042", g); /* 9 digits, no sign */
  CHECK(zkl__name_foreign(n, "-lock-", NULL));
  snprintf(n, sizeof n, "%s__READ__0000000001", g);
  CHECK(!zkl__name_foreign(n, "__WRIT__", "__READ__"));
  CHECK(zkl__name_foreign(n, "-lock-", NULL));
  /* a multi-lock's: its guid's tag in place of the last hex digits */
  snprintf(n, sizeof n, "%.28s" ZKL__ML_TAG "-lock-0000000042", g);
  CHECK(!zkl__name_foreign(n, "-lock-", NULL));
  snprintf(n, sizeof n, "%.27s" ZKL__ML_TAG "0-lock-0000000042", g);
  CHECK(zkl__name_foreign(n, "-lock-", NULL));
  snprintf(n, sizeof n, "%s__lock__0000000001", g); /* kazoo's, or ours */
  CHECK(!zkl__name_foreign(n, "__lock__", "__rlock__"));
  CHECK(zkl__name_foreign(n, "-lock-", NULL));
  /* Curator's, protected and not; a guid of uppercase hex; junk */
  CHECK(zkl__name_foreign(
      "_c_6f1c2a3e-2b4d-4c1a-9e0f-1234567890ab-lock-0000000001", "-lock-",
      NULL));
  CHECK(zkl__name_foreign("__READ__0000000001", "__WRIT__", "__READ__"));
  CHECK(zkl__name_foreign("0123456789ABCDEF0123456789abcdef-lock-0000000001",
                          "-lock-", NULL));
  CHECK(zkl__name_foreign("x", "-lock-", NULL));
  snprintf(n, sizeof n, "%s-lock-", g);
  CHECK(zkl__name_foreign(n, "-lock-", NULL));
}

static void test_may_insert_below(void) {
  char *names[] = {"_c_a-__WRIT__0000000001", "g-lock-0000000002",
                   "h-lock-0000000003"};
  zkl__entry_t *e = NULL;
  unsigned char skip[3] = {1, 0, 0};
  CHECK_INT(zkl__contenders(names, 3, &e), ==, 3);
  CHECK(!zkl__may_insert_below(e, 3, 0, NULL));
  CHECK(zkl__may_insert_below(e, 3, 1, NULL));
  CHECK(zkl__may_insert_below(e, 3, 2, NULL));
  CHECK(!zkl__may_insert_below(e, 3, 2, skip)); /* planted, skipped */
  free(e);
}

/* The read-write policy (zkl__decide): readers share, a writer waits for
 * all, the watches are the nearest conflicting nodes. */
static void test_decide(void) {
  char *names[] = {
      "0123456789abcdef0123456789abcdef__READ__0000000001",  /* r1 */
      "_c_5-__READ__0000000002",                              /* r2 */
      "0123456789abcdef0123456789abcdef__WRIT__0000000003",  /* w3 */
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa__rlock__0000000004", /* r4 */
      "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-lock-0000000005",    /* m5 */
      "cccccccccccccccccccccccccccccccc__READ__0000000006",  /* r6 */
  };
  zkl__entry_t *e = NULL;
  zkl__plan_t p;
  CHECK_INT(zkl__contenders(names, 6, &e), ==, 6);
  CHECK_INT(e[2].kind, ==, ZKL__KIND_EXCL); /* ours: never LOWERS */
  zkl__decide(e, 6, 0, NULL, 0, &p);
  CHECK_INT(p.before, ==, 0);
  zkl__decide(e, 6, 1, NULL, 0, &p);
  CHECK_INT(p.before, ==, 0); /* two readers hold together */
  zkl__decide(e, 6, 2, NULL, 0, &p); /* a writer behind two readers: both */
  CHECK_INT(p.before, ==, 2);
  CHECK_INT(p.nwatch, ==, 2);
  CHECK_INT(p.watch[0], ==, 1);
  CHECK_INT(p.watch[1], ==, 0);
  CHECK(p.handoff && !p.downgrade_ok);
  zkl__decide(e, 6, 3, NULL, 0, &p); /* a reader behind one writer */
  CHECK_INT(p.before, ==, 1);
  CHECK_INT(p.nwatch, ==, 1);
  CHECK_INT(p.watch[0], ==, 2);
  CHECK(p.handoff && p.downgrade_ok);
  zkl__decide(e, 6, 4, NULL, 0, &p); /* a mutex behind a mixed group */
  CHECK_INT(p.before, ==, 4);
  CHECK_INT(p.nwatch, ==, 1);
  CHECK_INT(p.watch[0], ==, 3);
  CHECK(!p.handoff);
  zkl__decide(e, 6, 5, NULL, 0, &p); /* a reader watches the nearest writer */
  CHECK_INT(p.before, ==, 2);
  CHECK_INT(p.watch[0], ==, 4);
  CHECK(!p.handoff && !p.downgrade_ok);
  free(e);
  {
    /* behind a Curator writer nothing is proved by a deletion */
    char *cur[] = {"_c_1-__WRIT__0000000001", "_c_2-__READ__0000000002"};
    CHECK_INT(zkl__contenders(cur, 2, &e), ==, 2);
    zkl__decide(e, 2, 1, NULL, 0, &p);
    CHECK(p.before == 1 && !p.handoff && !p.downgrade_ok);
    free(e);
  }
  CHECK(zkl__data_mark("zklock 1\nmode=read\nhost=h\n\n", 28, "mode=read"));
  CHECK(!zkl__data_mark("zklock 1\nhost=h\n\nmode=read\n", 28, "mode=read"));
  CHECK(!zkl__data_mark("mode=read\n", 10, "mode=read"));
  CHECK(!zkl__data_mark("zklock 1\nmode=read", 18, "mode=read")); /* no newline */
  /* revocation requests: our line in the header, or Curator's whole data */
  CHECK(zkl__revoke_asked("zklock 1\nrevoke=ab,5\nhost=h\n\n", 29));
  CHECK(zkl__revoke_asked("__REVOKE__", 10));
  CHECK(!zkl__revoke_asked("__REVOKE__x", 11));
  CHECK(!zkl__revoke_asked("zklock 1\nhost=h\n\nrevoke=x\n", 26)); /* body */
  CHECK(!zkl__revoke_asked("zklock 1\nrevoke=x", 17)); /* no newline */
  CHECK(!zkl__revoke_asked(NULL, 0));
}

/* The semaphore's policy: the N lowest leases hold; the first waiter
 * watches them all and any deletion lets it in; later ones watch their
 * predecessor; a lock's node among them holds everyone behind it. */
static void test_decide_lease(void) {
  char *names[] = {
      "0123456789abcdef0123456789abcdef-lease-0000000001",
      "1123456789abcdef0123456789abcdef-lease-0000000002",
      "2123456789abcdef0123456789abcdef-lease-0000000003",
      "3123456789abcdef0123456789abcdef-lease-0000000004",
      "4123456789abcdef0123456789abcdef-lock-0000000005",
      "5123456789abcdef0123456789abcdef-lease-0000000006",
  };
  zkl__entry_t *e = NULL;
  zkl__plan_t p;
  CHECK_INT(zkl__contenders(names, 6, &e), ==, 6);
  zkl__decide(e, 6, 1, NULL, 2, &p);
  CHECK_INT(p.before, ==, 0);
  zkl__decide(e, 6, 2, NULL, 2, &p); /* the first waiter */
  CHECK_INT(p.before, ==, 1);
  CHECK_INT(p.nwatch, ==, 2);
  CHECK(p.any && p.handoff && !p.relist_on_change);
  zkl__decide(e, 6, 3, NULL, 2, &p); /* the second: its predecessor */
  CHECK_INT(p.before, ==, 2);
  CHECK_INT(p.nwatch, ==, 1);
  CHECK_INT(p.watch[0], ==, 2);
  CHECK(!p.handoff && p.relist_on_change && p.poll);
  zkl__decide(e, 6, 5, NULL, 4, &p); /* behind a lock: waits, whatever N */
  CHECK(p.before >= 1);
  CHECK_INT(p.watch[0], ==, 4);
  CHECK(p.relist_on_change && !p.poll); /* a lock only goes */
  zkl__decide(e, 6, 4, NULL, 2, &p); /* the lock waits for every lease */
  CHECK_INT(p.before, ==, 4);
  CHECK_INT(zkl__dir_limit("max=3", 5), ==, 3);
  CHECK_INT(zkl__dir_limit("max=03", 6), ==, 0);
  CHECK_INT(zkl__dir_limit("max=", 4), ==, 0);
  CHECK_INT(zkl__dir_limit("max=99999", 9), ==, 0);
  CHECK_INT(zkl__dir_limit("max=65536", 9), ==, 65536);
  free(e);
}

/* A lease's name carries its N before the marker, where every parser
 * still sees a lease; a lease of another N before a member's own is in
 * its way as a lock is (it waits, never holds beside it), and a lease
 * whose name carries no N (an older version's) counts as the member's. */
static void test_lease_limit(void) {
  char *names[] = {
      "0123456789abcdef0123456789abcdef-n3-lease-0000000001",
      "1123456789abcdef0123456789abcdef-lease-0000000002", /* older: no N */
      "2123456789abcdef0123456789abcdef-n100-lease-0000000003",
      "3123456789abcdef0123456789abcdef-n3-lease-0000000004",
      "4123456789abcdef0123456789abcdef-n100-lease-0000000005",
  };
  zkl__entry_t *e = NULL;
  zkl__plan_t p;
  int32_t s = 0;
  int k = 0;
  CHECK(zkl__name_parse(names[2], &s, &k));
  CHECK_INT(s, ==, 3);
  CHECK(k & ZKL__KIND_LEASE);
  CHECK(zkl__name_parse("g-n3-lease--000000005", &s, &k));
  CHECK_INT(s, ==, -5);
  CHECK_INT(zkl__lease_limit("g-n3-lease--000000005"), ==, 3);
  CHECK_INT(zkl__lease_limit(names[0]), ==, 3);
  CHECK_INT(zkl__lease_limit(names[1]), ==, 0);
  CHECK_INT(zkl__lease_limit(names[2]), ==, 100);
  CHECK_INT(zkl__lease_limit("g-n65536-lease-0000000001"), ==, 65536);
  CHECK_INT(zkl__lease_limit("g-n65537-lease-0000000001"), ==, 0);
  CHECK_INT(zkl__lease_limit("g-n03-lease-0000000001"), ==, 0);
  CHECK_INT(zkl__lease_limit("g-n123456-lease-0000000001"), ==, 0);
  CHECK_INT(zkl__lease_limit("gn3-lease-0000000001"), ==, 0);
  CHECK_INT(zkl__lease_limit("n3-lease-0000000001"), ==, 0);
  CHECK_INT(zkl__lease_limit("g-n3-lock-0000000001"), ==, 0);
  CHECK_INT(zkl__contenders(names, 5, &e), ==, 5);
  zkl__decide(e, 5, 0, NULL, 3, &p);
  CHECK_INT(p.before, ==, 0);
  zkl__decide(e, 5, 1, NULL, 3, &p); /* no N: one of ours, 1 < 3 */
  CHECK_INT(p.before, ==, 0);
  /* the first of N=100 waits behind the lease of N=3 before it, as
   * behind a lock: it watches the nearest node and lists again when it
   * changes, with no hand-off; that node is a lease of its own (no N:
   * counted as its own), which marks its node when granted, and the mark
   * may be lost: it polls */
  zkl__decide(e, 5, 2, NULL, 100, &p);
  CHECK_INT(p.before, ==, 1);
  CHECK_INT(p.nwatch, ==, 1);
  CHECK_INT(p.watch[0], ==, 1);
  CHECK(p.relist_on_change && p.poll && !p.handoff && !p.any);
  /* the second of N=3: two of its N before it would let it in, the lease
   * of N=100 between does not; that one only goes: no poll */
  zkl__decide(e, 5, 3, NULL, 3, &p);
  CHECK_INT(p.before, ==, 1);
  CHECK_INT(p.watch[0], ==, 2);
  CHECK(p.relist_on_change && !p.poll);
  zkl__decide(e, 5, 4, NULL, 100, &p);
  CHECK_INT(p.before, ==, 2);
  /* left out (planted, not ephemeral): not in the way */
  {
    unsigned char skip[5] = {1, 0, 0, 1, 0};
    zkl__decide(e, 5, 4, skip, 100, &p);
    CHECK_INT(p.before, ==, 0);
  }
  free(e);
}

static void test_serial_order(void) {
  CHECK(zkl__seq_before(1, 2));
  CHECK(!zkl__seq_before(2, 1));
  CHECK(!zkl__seq_before(5, 5));
  /* across the wrap: 2147483647 comes before -2147483648 and -5 */
  CHECK(zkl__seq_before(2147483647, (int32_t)-2147483647 - 1));
  CHECK(zkl__seq_before(2147483600, -2147483640));
  CHECK(!zkl__seq_before(-2147483640, 2147483600));
  /* a string sort would put "-000000005" first: that is the bug avoided */
}

/* Who holds is decided pairwise from each node's own point of view: a
 * planted name whose sequence is 2^31 away (where serial order is not
 * transitive and a sort went wrong) can delay, never make two heads. */
static void test_place(void) {
  char *names[] = {"a-lock-0000000000", "b-lock-0000000002",
                   "zz-lock--2147483647", "zz-lock-2147483647",
                   "other-node", "c-lock-0000000005"};
  zkl__entry_t *e = NULL;
  unsigned char skip[6] = {0};
  int n = zkl__contenders(names, 6, &e), i, heads = 0, pred;
  CHECK_INT(n, ==, 5);
  for (i = 0; i < n; i++)
    if (e[i].name[0] != 'z' && zkl__place(e, n, i, NULL, NULL) == 0)
      heads++;
  CHECK_INT(heads, <=, 1);
  /* b (2) waits for a (0), its nearest predecessor; c (5) for b */
  CHECK_INT(zkl__place(e, n, 1, NULL, &pred), >=, 1);
  CHECK_STR(e[pred].name, "a-lock-0000000000");
  CHECK_INT(zkl__place(e, n, 4, NULL, &pred), >=, 2);
  CHECK_STR(e[pred].name, "b-lock-0000000002");
  /* the planted names skipped (not ephemeral): a holds, b is next alone */
  skip[2] = skip[3] = 1;
  CHECK_INT(zkl__place(e, n, 0, skip, &pred), ==, 0);
  CHECK_INT(pred, ==, -1);
  CHECK_INT(zkl__place(e, n, 1, skip, &pred), ==, 1);
  /* equal sequences (only planted names have them): the name decides */
  {
    char *tie[] = {"x-lock-0000000007", "y-lock-0000000007"};
    zkl__entry_t *t = NULL;
    CHECK_INT(zkl__contenders(tie, 2, &t), ==, 2);
    CHECK_INT(zkl__place(t, 2, 0, NULL, NULL) + zkl__place(t, 2, 1, NULL, NULL),
              ==, 1);
    free(t);
  }
  free(e);
}

static void test_names(void) {
  char big[ZKL_NAME_MAX + 2];
  memset(big, 'n', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK(zkl__valid_name("orders"));
  CHECK(zkl__valid_name("a.b-c_d:e"));
  CHECK(!zkl__valid_name(NULL));
  CHECK(!zkl__valid_name(""));
  CHECK(!zkl__valid_name("a/b"));
  CHECK(!zkl__valid_name("."));
  CHECK(!zkl__valid_name(".."));
  CHECK(!zkl__valid_name("new\nline"));
  CHECK(!zkl__valid_name(big));
  big[ZKL_NAME_MAX] = '\0';
  CHECK(zkl__valid_name(big));
  CHECK(zkl__valid_root("/locks"));
  CHECK(zkl__valid_root("/a/b/c"));
  CHECK(!zkl__valid_root(NULL));
  CHECK(!zkl__valid_root(""));
  CHECK(!zkl__valid_root("/"));
  CHECK(!zkl__valid_root("locks"));
  CHECK(!zkl__valid_root("/locks/"));
  CHECK(!zkl__valid_root("/a//b"));
  CHECK(!zkl__valid_root("/a/../b"));
}

static void test_errors(void) {
  CHECK_STR(zkl_err_name(ZKL_OK), "ZKL_OK");
  CHECK_STR(zkl_err_name(ZKL_ETIMEDOUT), "ZKL_ETIMEDOUT");
  CHECK_STR(zkl_err_name(ZKL_ENOTHELD), "ZKL_ENOTHELD");
  CHECK_STR(zkl_err_name(ZCONNECTIONLOSS), "ZCONNECTIONLOSS");
  CHECK_STR(zkl_err_name(ZNONODE), "ZNONODE");
  CHECK_STR(zkl_err_name(12345), "ZKL_UNKNOWN");
  /* the header's names of ZooKeeper's codes: its values (the library's
   * build checks them too), and each named as zookeeper.h names it */
  CHECK_INT((int)ZKL_ZNOAUTH, ==, (int)ZNOAUTH);
  CHECK_INT((int)ZKL_ZCONNECTIONLOSS, ==, -4);
#define UNIT_ZK_NAME(name, code)                                               \
  CHECK_INT((int)ZKL_##name, ==, (int)name);                                   \
  CHECK_STR(zkl_err_name(ZKL_##name), #name);                                  \
  CHECK_STR(zkl_strerror(ZKL_##name), zerror(name));
  ZKL_ZK_ERRNO_MAP(UNIT_ZK_NAME)
#undef UNIT_ZK_NAME
  CHECK_STR(zkl_strerror(ZKL_ELOST),
            "lock was lost (session expired or lock node deleted)");
  CHECK_STR(zkl_strerror(ZNONODE), zerror(ZNONODE));
  CHECK_STR(zkl_strerror(-99999), "unknown error");
  CHECK_STR(zkl_strerror(ZKL_OK), "success");
  /* codes are part of the ABI: never renumbered */
  CHECK_INT(ZKL_EINVAL, ==, -1001);
  CHECK_INT(ZKL_ELOST, ==, -1007);
  CHECK_INT(ZKL_EREVOKED, ==, -1014);
  CHECK_INT(ZKL_EDEADLK, ==, -1017);
  CHECK_STR(zkl_lock_state_name(ZKL_STATE_AT_RISK), "AT_RISK");
  CHECK_STR(zkl_lock_state_name(99), "UNKNOWN");
  CHECK_STR(zkl_version(), ZKL_VERSION_STRING);
  CHECK(ZKL_AT_LEAST_VERSION(0, 1, 0));
}

static void test_guid_and_data(void) {
  char a[ZKL__GUID_LEN + 1], b[ZKL__GUID_LEN + 1];
  char *d = NULL;
  size_t n = 0;
  CHECK_RC(zkl__guid(a), ZKL_OK);
  CHECK_RC(zkl__guid(b), ZKL_OK);
  CHECK_INT(strlen(a), ==, ZKL__GUID_LEN);
  CHECK(strcmp(a, b) != 0);
  CHECK_RC(zkl__node_data(NULL, "xy", 2, &d, &n), ZKL_OK);
  CHECK(d && strncmp(d, "zklock 1\nhost=", 14) == 0);
  CHECK(d && n > 2 && memcmp(d + n - 4, "\n\nxy", 4) == 0);
  CHECK(d && strstr(d, "\nid=") == NULL);
  free(d);
  CHECK_RC(zkl__node_data("cand-7", NULL, 0, &d, &n), ZKL_OK);
  CHECK(d && strstr(d, "\nid=cand-7\n\n") != NULL);
  free(d);
}

/* A flat lock's node data names the acquisition that made it; only a
 * whole header line with our guid counts (a longer guid, or the guid in
 * the caller's data, does not), and the line is no rewrite. */
static void test_flat_guid_data(void) {
  char g[ZKL__GUID_LEN + 1], other[ZKL__GUID_LEN + 1], buf[300];
  char *d = NULL;
  size_t n = 0;
  int k;
  CHECK_RC(zkl__guid(g), ZKL_OK);
  CHECK_RC(zkl__guid(other), ZKL_OK);
  CHECK_RC(zkl__node_data_guid(g, "xy", 2, &d, &n), ZKL_OK);
  CHECK(d && zkl__data_has_guid(d, n, g));
  CHECK(d && !zkl__data_has_guid(d, n, other));
  CHECK(d && zkl__data_intact(d, n, (long)getpid(), NULL, "xy", 2, 0));
  CHECK(d && memcmp(d + n - 4, "\n\nxy", 4) == 0);
  free(d);
  k = snprintf(buf, sizeof buf, "zklock 1\nguid=%sX\n\n", g);
  CHECK(!zkl__data_has_guid(buf, (size_t)k, g));
  k = snprintf(buf, sizeof buf, "zklock 1\npid=1\n\nguid=%s\n", g);
  CHECK(!zkl__data_has_guid(buf, (size_t)k, g));
  k = snprintf(buf, sizeof buf, "guid=%s\n", g);
  CHECK(!zkl__data_has_guid(buf, (size_t)k, g));
  CHECK(!zkl__data_has_guid(NULL, 0, g));
}

static void test_node_data_parse(void) {
  static const char full[] = "zklock 1\nhost=web-1\npid=42\nthread=43\n"
                             "id=cand-1\n\njob";
  static const char dup[] = "zklock 1\nhost=a\nhost=bb\nid=x\nid=yy\n\n";
  zkl_contender_t *e = calloc(1, sizeof *e);
  CHECK_RC(zkl__parse_node_data(e, full, sizeof full - 1), ZKL_OK);
  CHECK_STR(e->host, "web-1");
  CHECK_STR(e->id, "cand-1");
  CHECK_INT(e->pid, ==, 42);
  CHECK_INT(e->thread, ==, 43);
  CHECK(e->data_len == 3 && memcmp(e->data, "job", 3) == 0);
  zkl_contenders_free(e, 1);
  /* repeated keys: the last wins and nothing leaks (ASan/valgrind) */
  e = calloc(1, sizeof *e);
  CHECK_RC(zkl__parse_node_data(e, dup, sizeof dup - 1), ZKL_OK);
  CHECK_STR(e->host, "bb");
  CHECK_STR(e->id, "yy");
  CHECK(e->data == NULL);
  zkl_contenders_free(e, 1);
  /* a number on the last line, with no NUL after the buffer (ASan) */
  {
    char *raw = malloc(14);
    memcpy(raw, "zklock 1\npid=4", 14);
    e = calloc(1, sizeof *e);
    CHECK_RC(zkl__parse_node_data(e, raw, 14), ZKL_OK);
    CHECK_INT(e->pid, ==, 4);
    zkl_contenders_free(e, 1);
    free(raw);
  }
  /* another library's data is kept whole */
  e = calloc(1, sizeof *e);
  CHECK_RC(zkl__parse_node_data(e, "10.0.0.7", 8), ZKL_OK);
  CHECK(e->host == NULL && e->data_len == 8);
  zkl_contenders_free(e, 1);
}

/* Our node's data as we wrote it, give or take a revoker's request; a
 * mark we did not write, a line of ours changed, taken out or added to,
 * or other user data, is a rewrite. */
static void test_data_intact(void) {
  char *d = NULL;
  size_t len = 0;
  const char *u = "payload";
  char buf[600];
  long pid = (long)getpid();
  CHECK_RC(zkl__node_data(NULL, u, 7, &d, &len), ZKL_OK);
  CHECK(zkl__data_intact(d, len, pid, NULL, u, 7, 0));
  CHECK(!zkl__data_intact(d, len, pid, NULL, "payloaX", 7, 0));
  CHECK(!zkl__data_intact(d, len, pid + 1, NULL, u, 7, 0));
  CHECK(!zkl__data_intact(d, len, pid, "cand", u, 7, 0)); /* no id line */
  CHECK(!zkl__data_intact(d, len - 1, pid, NULL, u, 7, 0));
  CHECK(zkl__data_intact("__REVOKE__", 10, pid, NULL, u, 7, 0));
  CHECK(!zkl__data_intact("rewritten", 9, pid, NULL, u, 7, 0));
  CHECK(!zkl__data_intact("", 0, pid, NULL, u, 7, 0));
  CHECK(!zkl__data_intact(NULL, 0, pid, NULL, u, 7, 0));
  /* a revoker's line anywhere in the header */
  snprintf(buf, sizeof buf, "zklock 1\nrevoke=ab,10\n%s", d + 9);
  CHECK(zkl__data_intact(buf, strlen(buf), pid, NULL, u, 7, 0));
  /* marks: only those we wrote */
  snprintf(buf, sizeof buf, "zklock 1\nmode=read\n%s", d + 9);
  CHECK(!zkl__data_intact(buf, strlen(buf), pid, NULL, u, 7, 0));
  CHECK(zkl__data_intact(buf, strlen(buf), pid, NULL, u, 7, ZKL__MARK_READ));
  CHECK(!zkl__data_intact(buf, strlen(buf), pid, NULL, u, 7, ZKL__MARK_HELD));
  snprintf(buf, sizeof buf, "zklock 1\nstate=held\n%s", d + 9);
  CHECK(zkl__data_intact(buf, strlen(buf), pid, NULL, u, 7, ZKL__MARK_HELD));
  CHECK(!zkl__data_intact("zklock 1\nmode=read\n\n", 20, pid, NULL, "", 0,
                          ZKL__MARK_READ)); /* our pid line taken out */
  snprintf(buf, sizeof buf, "zklock 1\nx=1\n%s", d + 9);
  CHECK(!zkl__data_intact(buf, strlen(buf), pid, NULL, u, 7, 0));
  free(d);
  CHECK_RC(zkl__node_data("cand", NULL, 0, &d, &len), ZKL_OK);
  CHECK(zkl__data_intact(d, len, pid, "cand", NULL, 0, 0));
  CHECK(!zkl__data_intact(d, len, pid, "cane", NULL, 0, 0));
  CHECK(!zkl__data_intact(d, len, pid, NULL, NULL, 0, 0));
  free(d);
}

/* The one splice: the line goes first in the header, right after the
 * magic line, and every other byte follows unchanged. */
static void test_data_add_line(void) {
  static const char ours[] = "zklock 1\nhost=h\npid=4\n\nuser";
  char *d = NULL, *nd = NULL;
  size_t len = 0, nlen = 0;
  CHECK_RC(zkl__data_add_line(ours, sizeof ours - 1, "mode=read", &nd, &nlen),
           ZKL_OK);
  CHECK_STR(nd, "zklock 1\nmode=read\nhost=h\npid=4\n\nuser");
  CHECK_INT(nlen, ==, sizeof ours - 1 + 10);
  CHECK(zkl__data_mark(nd, nlen, ZKL__LINE_READ));
  free(nd);
  /* a line already there is added again: asking first is the caller's */
  CHECK_RC(zkl__data_add_line("zklock 1\nrevoke=a,1\n\n", 21, "revoke=a,1",
                              &nd, &nlen),
           ZKL_OK);
  CHECK_STR(nd, "zklock 1\nrevoke=a,1\nrevoke=a,1\n\n");
  CHECK_INT(zkl__revoke_count(nd, nlen), ==, 2);
  free(nd);
  /* a header without its empty line: still spliced, the rest kept */
  CHECK_RC(zkl__data_add_line("zklock 1\nhost=h", 15, "state=held", &nd,
                              &nlen),
           ZKL_OK);
  CHECK_STR(nd, "zklock 1\nstate=held\nhost=h");
  CHECK(zkl__data_mark(nd, nlen, ZKL__LINE_HELD));
  free(nd);
  /* nothing but the magic line: the added line is the whole header so
   * far, still with no end */
  CHECK_RC(zkl__data_add_line("zklock 1\n", 9, "mode=read", &nd, &nlen),
           ZKL_OK);
  CHECK(nd && nlen == 19 && memcmp(nd, "zklock 1\nmode=read\n", 19) == 0);
  free(nd);
  /* data without our header is nobody's to add to; nor is a line that
   * would end the header or add two lines a status line */
  nd = (char *)"untouched";
  CHECK_RC(zkl__data_add_line("10.0.0.7", 8, "mode=read", &nd, &nlen),
           ZKL_EINVAL);
  CHECK(nd == NULL && nlen == 0);
  CHECK_RC(zkl__data_add_line("zklock 1", 8, "mode=read", &nd, &nlen),
           ZKL_EINVAL);
  CHECK_RC(zkl__data_add_line(NULL, 0, "mode=read", &nd, &nlen), ZKL_EINVAL);
  CHECK_RC(zkl__data_add_line("__REVOKE__", 10, "revoke=a,1", &nd, &nlen),
           ZKL_EINVAL);
  CHECK_RC(zkl__data_add_line(ours, sizeof ours - 1, "", &nd, &nlen),
           ZKL_EINVAL);
  CHECK_RC(zkl__data_add_line(ours, sizeof ours - 1, "a=1\nb=2", &nd, &nlen),
           ZKL_EINVAL);
  CHECK(nd == NULL);
  /* our own data, marked, is intact for us with the mark only */
  CHECK_RC(zkl__node_data("cand", "u", 1, &d, &len), ZKL_OK);
  CHECK_RC(zkl__data_add_line(d, len, ZKL__LINE_HELD, &nd, &nlen), ZKL_OK);
  CHECK(zkl__data_intact(nd, nlen, (long)getpid(), "cand", "u", 1,
                         ZKL__MARK_HELD));
  CHECK(!zkl__data_intact(nd, nlen, (long)getpid(), "cand", "u", 1, 0));
  free(nd);
  free(d);
}

/* A revoker's line, and how many of them a header carries. */
static void test_revoke_lines(void) {
  char line[ZKL__REVOKE_LINE_MAX], small[8];
  CHECK_RC(zkl__revoke_line(line, sizeof line, "ab12", 2500), ZKL_OK);
  CHECK_STR(line, "revoke=ab12,2500");
  CHECK_RC(zkl__revoke_line(line, sizeof line, "ab", -1), ZKL_OK);
  CHECK_STR(line, "revoke=ab,-1");
  CHECK_RC(zkl__revoke_line(small, sizeof small, "ab12", 5), ZKL_EINVAL);
  CHECK_RC(zkl__revoke_line(line, sizeof line, "a\nb", 5), ZKL_EINVAL);
  CHECK_INT(zkl__revoke_count("zklock 1\nrevoke=a,1\nhost=h\nrevoke=\n\n"
                              "revoke=body,1\n",
                              50),
            ==, 2);
  CHECK_INT(zkl__revoke_count("zklock 1\nrevoke=a,1\nrevoke=b", 28), ==, 1);
  CHECK_INT(zkl__revoke_count("revoke=a,1\n", 11), ==, 0); /* not ours */
  CHECK_INT(zkl__revoke_count("zklock 2\nrevoke=a,1\n\n", 21), ==, 0);
  CHECK(!zkl__revoke_asked("zklock 2\nrevoke=a,1\n\n", 21));
  CHECK_INT(zkl__revoke_count("__REVOKE__", 10), ==, 0);   /* Curator's */
  CHECK_INT(zkl__revoke_count(NULL, 0), ==, 0);
  CHECK(zkl__data_ours("zklock 1\n", 9));
  CHECK(!zkl__data_ours("zklock 1", 8));
  CHECK(!zkl__data_ours("zklock 2\n", 9));
}

/* A semaphore directory's "max=N": written one way, and read only in
 * that way. */
static void test_dir_data(void) {
  char *d;
  int n;
  for (n = 1; n <= ZKL_LEASES_MAX; n += n < 20 ? 1 : 997) {
    d = zkl__dir_data(n);
    CHECK(d != NULL);
    CHECK_INT(zkl__dir_limit(d, d ? strlen(d) : 0), ==, n);
    free(d);
  }
  d = zkl__dir_data(ZKL_LEASES_MAX);
  CHECK(d && zkl__dir_limit(d, strlen(d)) == ZKL_LEASES_MAX);
  free(d);
  d = zkl__dir_data(7);
  CHECK_STR(d, "max=7");
  free(d);
  CHECK(zkl__dir_data(0) == NULL);
  CHECK(zkl__dir_data(-1) == NULL);
  CHECK(zkl__dir_data(ZKL_LEASES_MAX + 1) == NULL);
  CHECK_INT(zkl__dir_limit("max=3\n", 6), ==, 0);
  CHECK_INT(zkl__dir_limit("max=+3", 6), ==, 0);
  CHECK_INT(zkl__dir_limit("max=-3", 6), ==, 0);
  CHECK_INT(zkl__dir_limit(" max=3", 6), ==, 0);
  CHECK_INT(zkl__dir_limit("MAX=3", 5), ==, 0);
  CHECK_INT(zkl__dir_limit("max=0", 5), ==, 0);
  CHECK_INT(zkl__dir_limit("max=3", 4), ==, 0); /* only what len says */
  CHECK_INT(zkl__dir_limit(NULL, 0), ==, 0);
}

static void test_handles(void) {
  int x, y;
  CHECK_RC(zkl__handle_add(&x), ZKL_OK);
  CHECK(zkl__handle_live(&x));
  CHECK(!zkl__handle_live(&y));
  CHECK(zkl__handle_remove(&x));
  CHECK(!zkl__handle_remove(&x));
  CHECK(!zkl__handle_live(&x));
}

/* A deadline passed or too far to come still makes a valid timespec:
 * pthread_cond_timedwait refuses a negative tv_nsec with EINVAL, which a
 * wait loop would turn into a spin. */
static void test_deadline_ts(void) {
  struct timespec ts;
  zkl__deadline_ts(-1, &ts);
  CHECK_INT(ts.tv_sec, ==, 0);
  CHECK_INT(ts.tv_nsec, ==, 0);
  zkl__deadline_ts(INT64_MIN, &ts);
  CHECK(ts.tv_sec == 0 && ts.tv_nsec == 0);
  zkl__deadline_ts(ZKL_NO_DEADLINE, &ts);
  CHECK(ts.tv_sec > 0);
  CHECK(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
  zkl__deadline_ts(12345, &ts);
  CHECK_INT(ts.tv_sec, ==, 12);
  CHECK_INT(ts.tv_nsec, ==, 345000000);
}

/* Every call that hands out an object sets *out to NULL when it fails,
 * whatever the failure (the header says so; code that destroys what it
 * got, NULL included, relies on it). */
static void test_out_null_on_failure(void) {
  static int junk;
  void *bad = &junk;
  zkl_client_t *c = bad;
  zkl_mutex_t *m = bad;
  zkl_rwlock_t *rw = bad;
  zkl_semaphore_t *sem = bad;
  zkl_lease_t *lease = bad;
  zkl_election_t *e = bad;
  zkl_multilock_t *ml = bad;
  zkl_hold_t *h = bad;
  zkl_contender_t *q = bad;
  size_t n = 7;
  zkl_multilock_member_t mm = {"a", ZKL_MODE_EXCLUSIVE};
  CHECK_INT(zkl_client_create(&c, NULL, NULL), ==, ZKL_EINVAL);
  CHECK(c == NULL);
  c = bad;
  CHECK_INT(zkl_client_create(&c, "", NULL), ==, ZKL_EINVAL);
  CHECK(c == NULL);
  CHECK_INT(zkl_mutex_create(&m, NULL, "a", NULL), ==, ZKL_EINVAL);
  CHECK(m == NULL);
  CHECK_INT(zkl_rwlock_create(&rw, NULL, "a", NULL), ==, ZKL_EINVAL);
  CHECK(rw == NULL);
  CHECK_INT(zkl_semaphore_create(&sem, NULL, "a", 2, NULL), ==, ZKL_EINVAL);
  CHECK(sem == NULL);
  CHECK_INT(zkl_semaphore_acquire(NULL, &lease), ==, ZKL_EINVAL);
  CHECK(lease == NULL);
  CHECK_INT(zkl_election_create(&e, NULL, "a", "id", NULL), ==, ZKL_EINVAL);
  CHECK(e == NULL);
  CHECK_INT(zkl_multilock_create(&ml, NULL, &mm, 1, NULL), ==, ZKL_EINVAL);
  CHECK(ml == NULL);
  CHECK_INT(zkl_mutex_lock_async(NULL, 0, NULL, NULL, &h), ==, ZKL_EINVAL);
  CHECK(h == NULL);
  h = bad;
  CHECK_INT(zkl_rwlock_rdlock_async(NULL, 0, NULL, NULL, &h), ==, ZKL_EINVAL);
  CHECK(h == NULL);
  h = bad;
  CHECK_INT(zkl_rwlock_wrlock_async(NULL, 0, NULL, NULL, &h), ==, ZKL_EINVAL);
  CHECK(h == NULL);
  h = bad;
  CHECK_INT(zkl_semaphore_acquire_async(NULL, 0, NULL, NULL, &h), ==,
            ZKL_EINVAL);
  CHECK(h == NULL);
  CHECK_INT(zkl_mutex_queue(NULL, NULL, "a", &q, &n), ==, ZKL_EINVAL);
  CHECK(q == NULL && n == 0);
}

/* digest.c: SHA-1 (FIPS 180-4's examples, and a two-block tail), base64,
 * and the digest id ZooKeeper gives the test ensemble's super user
 * (scripts/zk-ensemble.sh), computed the same way from its credentials. */
static void hex(const unsigned char *b, size_t n, char *out) {
  size_t i;
  for (i = 0; i < n; i++)
    sprintf(out + 2 * i, "%02x", b[i]);
}

static void test_digest(void) {
  static const struct {
    const char *in, *sha1;
  } v[] = {
      {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
      {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
      {"The quick brown fox jumps over the lazy dog",
       "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"},
  };
  unsigned char sum[20];
  char h[41], b64[64];
  zkl__identity_t a, b;
  size_t i;
  for (i = 0; i < sizeof v / sizeof v[0]; i++) {
    zkl__sha1(v[i].in, strlen(v[i].in), sum);
    hex(sum, 20, h);
    CHECK_STR(h, v[i].sha1);
  }
  CHECK_INT(zkl__base64((const unsigned char *)"f", 1, b64), ==, 4);
  CHECK_STR(b64, "Zg==");
  zkl__base64((const unsigned char *)"fo", 2, b64);
  CHECK_STR(b64, "Zm8=");
  zkl__base64((const unsigned char *)"foobar", 6, b64);
  CHECK_STR(b64, "Zm9vYmFy");
  zkl__sha1("super:zklock-test-super", 23, sum);
  zkl__base64(sum, 20, b64);
  CHECK_STR(b64, "VBgGM0yVI2N64eWfTnvWeUWwxKw=");
  /* two clients, two identities; each id is "user:" + 28 characters */
  CHECK_RC(zkl__identity_make(&a), ZKL_OK);
  CHECK_RC(zkl__identity_make(&b), ZKL_OK);
  CHECK(strcmp(a.cred, b.cred) != 0);
  CHECK(strncmp(a.cred, "zkl-", 4) == 0 && strchr(a.cred, ':') != NULL);
  CHECK_INT(strlen(a.acl_id), ==, 4 + 32 + 1 + 28);
  CHECK(strncmp(a.acl_id, a.cred, 4 + 32 + 1) == 0);
  zkl__sha1(a.cred, strlen(a.cred), sum);
  zkl__base64(sum, 20, b64);
  CHECK_STR(a.acl_id + 4 + 32 + 1, b64);
}


/* The client's timer heap (base/timer.c): against a plain array, under
 * random arms, re-arms and stops, every fire comes in due order, exactly
 * the timers due, and the next due time is the earliest left; a fire may
 * re-arm itself and stop another. */
#define NT 2000
static zkl__timer_t tms[NT];
static int64_t want[NT]; /* the due time armed, 0: not armed */
static int fired[NT], nfired;
static struct zkl_client *tc;

static void on_fire(zkl__timer_t *t) {
  int i = (int)(t - tms);
  CHECK(want[i] != 0);
  CHECK(!t->armed);
  want[i] = 0;
  fired[nfired++] = i;
  /* every 7th re-arms itself for later; every 11th stops its neighbour */
  if (i % 7 == 0 && t->due < 1000000) {
    want[i] = t->due + 1000000;
    zkl__timer_set(tc, t, want[i], on_fire);
  }
  if (i % 11 == 0 && i + 1 < NT) {
    zkl__timer_stop(tc, &tms[i + 1]);
    want[i + 1] = 0;
  }
}

static void test_timers(void) {
  int i, k, round, narmed, bad = 0;
  int64_t now = 0, least, next;
  tc = calloc(1, sizeof *tc);
  CHECK(tc != NULL);
  pthread_cond_init(&tc->cv, NULL);
  srand(7);
  for (round = 0; round < 40; round++) {
    for (k = 0; k < NT / 2; k++) {
      i = rand() % NT;
      if (rand() % 4 == 0) {
        zkl__timer_stop(tc, &tms[i]);
        want[i] = 0;
      } else {
        want[i] = now + 1 + rand() % 5000;
        zkl__timer_set(tc, &tms[i], want[i], on_fire);
      }
    }
    now += 1 + rand() % 3000;
    nfired = 0;
    next = zkl__timers_fire(tc, now);
    for (k = 1; k < nfired; k++) /* due order (a re-arm is later) */
      if (tms[fired[k]].due % 1000000 < tms[fired[k - 1]].due % 1000000)
        bad++;
    least = 0;
    narmed = 0;
    for (i = 0; i < NT; i++) {
      CHECK_INT(tms[i].armed, ==, want[i] != 0);
      if (!want[i])
        continue;
      narmed++;
      if (want[i] <= now)
        bad++; /* due and not fired */
      if (!least || want[i] < least)
        least = want[i];
    }
    CHECK_INT((long)next, ==, (long)least);
    CHECK_INT((long)tc->ntimers, ==, (long)narmed);
  }
  CHECK_INT(bad, ==, 0);
  for (i = 0; i < NT; i++)
    zkl__timer_stop(tc, &tms[i]);
  CHECK(tc->timers == NULL);
  CHECK_INT((long)tc->ntimers, ==, 0L);
  CHECK_INT((long)zkl__timers_fire(tc, now + 10000000), ==, 0L);
  pthread_cond_destroy(&tc->cv);
  free(tc);
}

int main(void) {
  RUN(test_digest);
  RUN(test_seq_parse);
  RUN(test_name_parse);
  RUN(test_name_foreign);
  RUN(test_may_insert_below);
  RUN(test_decide);
  RUN(test_decide_lease);
  RUN(test_lease_limit);
  RUN(test_serial_order);
  RUN(test_place);
  RUN(test_names);
  RUN(test_errors);
  RUN(test_guid_and_data);
  RUN(test_handles);
  RUN(test_data_intact);
  RUN(test_flat_guid_data);
  RUN(test_node_data_parse);
  RUN(test_data_add_line);
  RUN(test_revoke_lines);
  RUN(test_dir_data);
  RUN(test_deadline_ts);
  RUN(test_out_null_on_failure);
  RUN(test_timers);
  return CHECK_DONE();
}
