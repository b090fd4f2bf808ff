/* SPDX-License-Identifier: Apache-2.0 */
/* cli_json.c: a lock's or an election's queue as one JSON object, for
 * zklock --list --json and zkelect --leader --json. The key set is fixed:
 * a field the node does not say is null, never left out (zklock(1),
 * zkelect(1)). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static const char *mode_name(int mode) {
  return mode == ZKL_MODE_SHARED  ? "shared"
         : mode == ZKL_MODE_LEASE ? "lease"
                                  : "exclusive";
}

/* A node nobody's session owns never holds, wherever it sorts (as in
 * cli_print_queue). */
static int holds(const zkl_contender_t *e) { return e->owner != 0 && e->holds; }

static void put_contender(json_t *j, const zkl_contender_t *e, int election,
                          int64_t now) {
  char owner[32];
  int64_t age = now - e->ctime_ms;
  json_object_begin(j);
  json_key(j, "role");
  json_str(j, e->owner == 0 ? "planted"
              : holds(e)    ? (election ? "leader" : "holder")
                            : (election ? "candidate" : "waiter"));
  json_key(j, "node");
  json_str(j, e->node);
  json_key(j, "seq");
  json_int(j, e->seq);
  json_key(j, "mode");
  json_str(j, mode_name(e->mode));
  json_key(j, "holds");
  json_bool(j, holds(e));
  json_key(j, "token");
  json_int(j, e->czxid);
  json_key(j, "owner");
  snprintf(owner, sizeof owner, "0x%" PRIx64, (uint64_t)e->owner);
  json_str(j, e->owner ? owner : NULL);
  json_key(j, "id");
  json_str(j, e->id);
  json_key(j, "host");
  json_str(j, e->host);
  json_key(j, "pid");
  if (e->pid)
    json_int(j, e->pid);
  else
    json_null(j);
  json_key(j, "ctime_ms");
  json_int(j, e->ctime_ms);
  json_key(j, "age_ms");
  json_int(j, age > 0 ? age : 0); /* server and local clocks differ a little */
  json_key(j, "data");
  if (e->data && e->data_len)
    json_string(j, e->data, e->data_len);
  else
    json_null(j);
  json_object_end(j);
}

/* One queue's object: {kind: path, ["name": name,] "held", ["leader",]
 * "contenders"}. Returns whether it is held. */
static int put_queue(json_t *j, const char *kind, const char *path,
                     const char *name, const zkl_contender_t *list, size_t n,
                     int64_t now) {
  int election = strcmp(kind, "election") == 0, held = 0;
  size_t i;
  for (i = 0; i < n; i++)
    held |= holds(&list[i]);
  json_object_begin(j);
  json_key(j, kind);
  json_str(j, path);
  if (name) {
    json_key(j, "name");
    json_str(j, name);
  }
  json_key(j, "held");
  json_bool(j, held);
  if (election) {
    /* the one leading: its id as --leader prints it, else its node */
    const zkl_contender_t *l = n > 0 && holds(&list[0]) ? &list[0] : NULL;
    json_key(j, "leader");
    json_str(j, l ? (l->id ? l->id : l->node) : NULL);
  }
  json_key(j, "contenders");
  json_array_begin(j);
  for (i = 0; i < n; i++)
    put_contender(j, &list[i], election, now);
  json_array_end(j);
  json_object_end(j);
  return held;
}

/* The newline, and whether `out` took it all: a reader must not take a
 * cut-off object for the whole listing. */
static int finish(FILE *out) {
  fputc('\n', out);
  if (fflush(out) != 0 || ferror(out)) {
    cli_error("cannot write the listing: %s", strerror(errno));
    return -1;
  }
  return 0;
}

int cli_json_queue(FILE *out, const char *kind, const char *root,
                   const char *name, const zkl_contender_t *list, size_t n) {
  char path[ZKL_ROOT_MAX + ZKL_NAME_MAX + 2];
  json_t j;
  int held;
  snprintf(path, sizeof path, "%s/%s", root, name);
  json_init(&j, out);
  held = put_queue(&j, kind, path, NULL, list, n, cli_wall_ms());
  return finish(out) < 0 ? -1 : held;
}

int cli_json_locks(FILE *out, const char *root, const zkl_lock_info_t *list,
                   size_t n) {
  int64_t now = cli_wall_ms();
  int held = 0;
  json_t j;
  size_t i, k;
  for (i = 0; i < n; i++)
    for (k = 0; k < list[i].count; k++)
      held |= holds(&list[i].contenders[k]);
  json_init(&j, out);
  json_object_begin(&j);
  json_key(&j, "root");
  json_str(&j, root);
  json_key(&j, "held");
  json_bool(&j, held);
  json_key(&j, "locks");
  json_array_begin(&j);
  for (i = 0; i < n; i++) {
    /* names come from the server: no bound but its own */
    size_t len = strlen(root) + strlen(list[i].name) + 2;
    char *path;
    if (!list[i].count)
      continue; /* nobody there: as the lines leave it out */
    if (!(path = malloc(len))) {
      cli_error("out of memory");
      return -1;
    }
    snprintf(path, len, "%s/%s", root, list[i].name);
    put_queue(&j, "lock", path, list[i].name, list[i].contenders,
              list[i].count, now);
    free(path);
  }
  json_array_end(&j);
  json_object_end(&j);
  return finish(out) < 0 ? -1 : held;
}
