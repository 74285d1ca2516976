/* Synchronization through the C library, seen by the inst sampler's full
 * mode: the program's calls to pthread mutexes, spin locks, barriers,
 * condition variables and POSIX semaphores run uninstrumented libc code, so
 * the memory they share is invisible to the compiler's instrumentation.
 * These wrappers (they interpose libc's functions: the program links this
 * runtime before libc) record the accesses each call implies on its
 * object's first word, as SAMPLE records flagged CT_SAMPLE_SYNC, then call
 * libc's function:
 *   lock, trylock (taken), sem_wait (decremented)   a read-modify-write,
 *                                                   after the call
 *   unlock                                          a store, before
 *   sem_post, cond_signal, cond_broadcast           a read-modify-write, before
 *   barrier_wait     a read-modify-write (arrival) before, a load (departure)
 *                    after: the last to arrive wrote the word each one reads
 *   cond_wait        the mutex's unlock and a read-modify-write of the
 *                    condition before, a load of it and the mutex's lock after
 * (stamped before a call that publishes, after a call that acquires, so that
 * the acquirer's record follows the publisher's).  Only in full mode, only
 * on recorded threads; COMMTRACE_INST_SYNC=0 turns them into plain calls.
 * The OpenMP runtime's synchronization: inst_omp.c. */
#include "inst.h"

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

bool inst_sync_off;


INST_REAL(int, pthread_mutex_lock, pthread_mutex_t *)
INST_REAL(int, pthread_mutex_trylock, pthread_mutex_t *)
INST_REAL(int, pthread_mutex_unlock, pthread_mutex_t *)
INST_REAL(int, pthread_spin_lock, pthread_spinlock_t *)
INST_REAL(int, pthread_spin_trylock, pthread_spinlock_t *)
INST_REAL(int, pthread_spin_unlock, pthread_spinlock_t *)
INST_REAL(int, pthread_barrier_wait, pthread_barrier_t *)
INST_REAL(int, pthread_cond_wait, pthread_cond_t *, pthread_mutex_t *)
INST_REAL(int, pthread_cond_timedwait, pthread_cond_t *, pthread_mutex_t *, const struct timespec *)
INST_REAL(int, pthread_cond_signal, pthread_cond_t *)
INST_REAL(int, pthread_cond_broadcast, pthread_cond_t *)
INST_REAL(int, sem_wait, sem_t *)
INST_REAL(int, sem_trywait, sem_t *)
INST_REAL(int, sem_timedwait, sem_t *, const struct timespec *)
INST_REAL(int, sem_post, sem_t *)

/* Every real function looked up at load time, recording or not: never
 * lazily in a wrapper, where the first call could be sem_post in a signal
 * handler that interrupted the dynamic linker (dlsym takes its lock). */
__attribute__((constructor)) static void sync_resolve(void)
{
	resolve_pthread_mutex_lock();
	resolve_pthread_mutex_trylock();
	resolve_pthread_mutex_unlock();
	resolve_pthread_spin_lock();
	resolve_pthread_spin_trylock();
	resolve_pthread_spin_unlock();
	resolve_pthread_barrier_wait();
	resolve_pthread_cond_wait();
	resolve_pthread_cond_timedwait();
	resolve_pthread_cond_signal();
	resolve_pthread_cond_broadcast();
	resolve_sem_wait();
	resolve_sem_trywait();
	resolve_sem_timedwait();
	resolve_sem_post();
}

/* Called from inst_process_init (full mode). */
void inst_sync_init(void)
{
	const char *e = getenv("COMMTRACE_INST_SYNC");
	inst_sync_off = e && e[0] == '0';
}

#define RMW CT_ACCESS_ATOMIC
#define ST CT_ACCESS_STORE
#define LD CT_ACCESS_LOAD

RT_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	int r = get_pthread_mutex_lock()(m);
	if (!r)
		inst_sync_acc(m, RMW, INST_RET() - 1);
	return r;
}

RT_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	int r = get_pthread_mutex_trylock()(m);
	if (!r)
		inst_sync_acc(m, RMW, INST_RET() - 1);
	return r;
}

RT_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	inst_sync_acc(m, ST, INST_RET() - 1);
	return get_pthread_mutex_unlock()(m);
}

RT_EXPORT int pthread_spin_lock(pthread_spinlock_t *s)
{
	int r = get_pthread_spin_lock()(s);
	if (!r)
		inst_sync_acc((const void *)s, RMW, INST_RET() - 1);
	return r;
}

RT_EXPORT int pthread_spin_trylock(pthread_spinlock_t *s)
{
	int r = get_pthread_spin_trylock()(s);
	if (!r)
		inst_sync_acc((const void *)s, RMW, INST_RET() - 1);
	return r;
}

RT_EXPORT int pthread_spin_unlock(pthread_spinlock_t *s)
{
	inst_sync_acc((const void *)s, ST, INST_RET() - 1);
	return get_pthread_spin_unlock()(s);
}

RT_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	uintptr_t ip = INST_RET() - 1;
	inst_sync_acc(b, RMW, ip);
	int r = get_pthread_barrier_wait()(b);
	inst_sync_acc(b, LD, ip);
	return r;
}

RT_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	uintptr_t ip = INST_RET() - 1;
	inst_sync_acc(m, ST, ip);
	inst_sync_acc(c, RMW, ip);
	int r = get_pthread_cond_wait()(c, m);
	inst_sync_acc(c, LD, ip);
	inst_sync_acc(m, RMW, ip);
	return r;
}

RT_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                     const struct timespec *abstime)
{
	uintptr_t ip = INST_RET() - 1;
	inst_sync_acc(m, ST, ip);
	inst_sync_acc(c, RMW, ip);
	int r = get_pthread_cond_timedwait()(c, m, abstime);
	inst_sync_acc(c, LD, ip);
	inst_sync_acc(m, RMW, ip);
	return r;
}

RT_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	inst_sync_acc(c, RMW, INST_RET() - 1);
	return get_pthread_cond_signal()(c);
}

RT_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	inst_sync_acc(c, RMW, INST_RET() - 1);
	return get_pthread_cond_broadcast()(c);
}

RT_EXPORT int sem_wait(sem_t *s)
{
	int r = get_sem_wait()(s);
	if (!r)
		inst_sync_acc(s, RMW, INST_RET() - 1);
	return r;
}

RT_EXPORT int sem_trywait(sem_t *s)
{
	int r = get_sem_trywait()(s);
	if (!r)
		inst_sync_acc(s, RMW, INST_RET() - 1);
	return r;
}

RT_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	int r = get_sem_timedwait()(s, abstime);
	if (!r)
		inst_sync_acc(s, RMW, INST_RET() - 1);
	return r;
}

RT_EXPORT int sem_post(sem_t *s)
{
	inst_sync_acc(s, RMW, INST_RET() - 1);
	return get_sem_post()(s);
}
