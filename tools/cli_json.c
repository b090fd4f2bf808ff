/* SPDX-License-Identifier: Apache-2.0 */
/* cli_json.c: a lock's or an election's queue as one JSON object, for
 * zklock --list --json and zkelect --leader --json. The key set is fixed:
 * a field the node does not say is null, never left out (zklock(1),
 * zkelect(1)). */
#include <errno.h>
#include <inttypes.h>
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

int cli_json_queue(FILE *out, const char *kind, const char *root,
                   const char *name, const zkl_contender_t *list, size_t n) {
  int election = strcmp(kind, "election") == 0, held = 0;
  int64_t now = cli_wall_ms();
  char path[ZKL_ROOT_MAX + ZKL_NAME_MAX + 2];
  json_t j;
  size_t i;
  for (i = 0; i < n; i++)
    held |= holds(&list[i]);
  snprintf(path, sizeof path, "%s/%s", root, name);
  json_init(&j, out);
  json_object_begin(&j);
  json_key(&j, kind);
  json_str(&j, path);
  json_key(&j, "held");
  json_bool(&j, held);
  if (election) {
    /* the one leading: its id as --leader prints it, else its node */
    const zkl_contender_t *l = n > 0 && holds(&list[0]) ? &list[0] : NULL;
    json_key(&j, "leader");
    json_str(&j, l ? (l->id ? l->id : l->node) : NULL);
  }
  json_key(&j, "contenders");
  json_array_begin(&j);
  for (i = 0; i < n; i++)
    put_contender(&j, &list[i], election, now);
  json_array_end(&j);
  json_object_end(&j);
  fputc('\n', out);
  /* a reader must not take a cut-off object for the whole listing */
  if (fflush(out) != 0 || ferror(out)) {
    cli_error("cannot write the listing: %s", strerror(errno));
    return -1;
  }
  return held;
}
