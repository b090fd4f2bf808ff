/* SPDX-License-Identifier: Apache-2.0 */
/* zktree.h: removing a test's tree through a given ZooKeeper handle, for
 * the C tests (the handle decides what may be removed: admin.h's has no
 * identity, test_auth.c's super user may remove anything). */
#ifndef ZKLOCK_TEST_ZKTREE_H
#define ZKLOCK_TEST_ZKTREE_H

#include <stdio.h>
#include <zookeeper/zookeeper.h>

/* Deletes path and everything below it, children first; best effort. */
static void remove_tree(zhandle_t *zh, const char *path) {
  struct String_vector v;
  int i;
  if (zoo_get_children(zh, path, 0, &v) == ZOK) {
    for (i = 0; i < v.count; i++) {
      char child[512];
      snprintf(child, sizeof child, "%s/%s", path, v.data[i]);
      remove_tree(zh, child);
    }
    deallocate_String_vector(&v);
  }
  zoo_delete(zh, path, -1);
}

#endif
