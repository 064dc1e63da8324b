/* A three-state futex mutex (0 free, 1 locked, 2 locked with waiters). */
#include "rt/rt.h"
#include "rt/sys.h"

void rt_mutex_lock(struct rt_mutex *m)
{
	int c = 0;
	if (atomic_compare_exchange_strong(&m->state, &c, 1))
		return;
	/* Spin briefly: our critical sections are short. */
	for (int i = 0; i < 100; i++) {
		c = 0;
		if (atomic_load_explicit(&m->state, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak(&m->state, &c, 1))
			return;
		__asm__ volatile("" ::: "memory");
	}
	if (c != 2)
		c = atomic_exchange(&m->state, 2);
	while (c != 0) {
		(void)sys_futex((volatile int *)&m->state, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2, NULL);
		c = atomic_exchange(&m->state, 2);
	}
}

bool rt_mutex_trylock(struct rt_mutex *m)
{
	int c = 0;
	return atomic_compare_exchange_strong(&m->state, &c, 1);
}

void rt_mutex_unlock(struct rt_mutex *m)
{
	if (atomic_exchange(&m->state, 0) == 2)
		(void)sys_futex((volatile int *)&m->state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL);
}

/* Written only when held: after fork an untouched page stays shared. */
void rt_mutex_reset(struct rt_mutex *m)
{
	if (atomic_load_explicit(&m->state, memory_order_relaxed) != 0)
		atomic_store(&m->state, 0);
}
