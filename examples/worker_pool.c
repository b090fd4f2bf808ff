/* SPDX-License-Identifier: Apache-2.0 */
/* worker_pool.c: a pool of worker threads, bounded across processes and
 * machines by a semaphore.
 *
 *   worker_pool HOSTS [PERMITS [WORKERS [JOBS]]]     (defaults 2, 4, 8)
 *
 * WORKERS threads share JOBS jobs. Each job holds one of the PERMITS
 * leases of the semaphore /locks/example-pool while it runs, so at most
 * PERMITS jobs run at once, counting every process that runs this on the
 * same ensemble: say, to spare a database that takes only so many
 * connections. Every process must give the same PERMITS.
 *
 *   cc -pthread -o worker_pool worker_pool.c $(pkg-config --cflags --libs zklock) */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zklock.h>

static zkl_semaphore_t *sem; /* one object, shared by every worker thread */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int jobs, next_job, failures; /* under mu */

static int take_job(void) {
  int job;
  pthread_mutex_lock(&mu);
  job = next_job < jobs ? ++next_job : 0;
  pthread_mutex_unlock(&mu);
  return job;
}

static void failed(int job, const char *what, int rc) {
  fprintf(stderr, "job %d: %s: %s\n", job, what, zkl_strerror(rc));
  pthread_mutex_lock(&mu);
  failures++;
  pthread_mutex_unlock(&mu);
}

static void *worker(void *arg) {
  long id = (long)arg;
  int job, rc;
  while ((job = take_job()) != 0) {
    zkl_lease_t *lease;
    uint64_t token;
    /* wait at most a minute for a free lease */
    rc = zkl_semaphore_timedacquire(sem, zkl_now_ms() + 60000, &lease);
    if (rc != ZKL_OK) {
      failed(job, "no lease", rc);
      continue;
    }
    zkl_lease_token(lease, &token);
    printf("pid %ld: job %d starts on worker %ld, lease %" PRIu64 "\n",
           (long)getpid(), job, id, token);
    usleep(200000); /* the job */
    printf("pid %ld: job %d done\n", (long)getpid(), job);
    rc = zkl_lease_release(lease); /* from any thread; ZKL_ELOST if lost */
    if (rc != ZKL_OK)
      failed(job, "lease lost", rc);
  }
  return NULL;
}

int main(int argc, char **argv) {
  zkl_client_t *client = NULL;
  pthread_t threads[64];
  unsigned permits;
  long workers, started, i;
  int rc;

  if (argc < 2) {
    fprintf(stderr, "usage: %s HOSTS [PERMITS [WORKERS [JOBS]]]\n", argv[0]);
    return 64;
  }
  permits = argc > 2 ? (unsigned)atoi(argv[2]) : 2;
  workers = argc > 3 ? atol(argv[3]) : 4;
  jobs = argc > 4 ? atoi(argv[4]) : 8;
  if (workers < 1 || workers > 64) {
    fprintf(stderr, "WORKERS: 1 to 64\n");
    return 64;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* each line at once, even into a file */

  rc = zkl_client_create(&client, argv[1], NULL); /* one session for all */
  if (rc == ZKL_OK)
    rc = zkl_semaphore_create(&sem, client, "example-pool", permits, NULL);
  if (rc != ZKL_OK) {
    fprintf(stderr, "worker_pool: %s\n", zkl_strerror(rc));
    zkl_client_destroy(client);
    return 1;
  }
  for (started = 0; started < workers; started++)
    if (pthread_create(&threads[started], NULL, worker, (void *)(started + 1)))
      break; /* out of threads: those we have do the jobs */
  for (i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  zkl_semaphore_destroy(sem); /* every lease is released by now */
  zkl_client_destroy(client);
  return failures || started == 0 ? 1 : 0;
}
