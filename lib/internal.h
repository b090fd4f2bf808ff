/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: what the library's files share. Never installed.
 *
 * lib/ has four layers, each a folder with one header, included here from
 * the bottom up. A file calls functions of its own layer and the layers
 * below, never above: an upper layer reaches down by name, a lower one
 * reaches up only through what it is handed (a notice's function, the
 * session listener, a run's wake function, the client's watcher).
 * scripts/callgraph.sh checks it. ARCHITECTURE.md walks through them. */
#ifndef ZKLOCK_INTERNAL_H
#define ZKLOCK_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zklock.h"

#define ZKL__HIDDEN __attribute__((visibility("hidden")))

#if defined(__GNUC__)
#define ZKL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ZKL__PRINTF(f, a)
#endif

/* Types every layer passes around; each is defined in its layer's header. */
typedef struct zkl__session zkl__session_t; /* zk.h */
typedef struct zkl__call zkl__call_t;       /* zk.h */
typedef struct zkl__acq zkl__acq_t;         /* engine.h */
typedef struct zkl__queue zkl__queue_t;     /* engine.h */
typedef struct zkl__went zkl__went_t;       /* engine.h */

#include "base/base.h"
#include "zk/zk.h"
#include "engine/engine.h"
#include "recipes/recipes.h"

#endif
