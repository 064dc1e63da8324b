/* Thread registry: open table of slots, linear probing on tid. */
#include "collect/threads.h"
#include "rt/thread.h"
#include "rt/host.h"
#include "rt/sys.h"

#define NAME_REFRESH_NS RT_NS_PER_SEC
#define AUX_MINSIGSTKSZ 51
/* Room our handlers need below the kernel's signal frame (the unwinder's
 * locals, the ring record's bookkeeping), with a margin. */
#define HANDLER_STACK_BYTES 8192u

/* Whether a thread whose stack starts at stack_lo, now at sp, can take a
 * signal: the kernel's frame (AT_MINSIGSTKSZ, 2 KiB to 4 KiB) plus our
 * handler must fit below sp. */
static bool stack_fits_signals(uint64_t stack_lo, uint64_t sp)
{
	if (stack_lo == 0 || sp <= stack_lo)
		return true; /* unknown: the kernel frame is the usual risk of any signal */
	uint64_t frame = getauxval ? getauxval(AUX_MINSIGSTKSZ) : 0;
	if (frame == 0)
		frame = 4096;
	return sp - stack_lo >= frame + HANDLER_STACK_BYTES;
}

struct thread_slot thread_slots[THREADS_MAX];
/* Slots claimed since the last reset: never cleared while the process runs,
 * so a probe for a tid stops at the first slot whose bit is clear (no slot
 * further along its chain can hold it) and loops skip the untouched table. */
#define USED_WORDS (THREADS_MAX / 64)
static atomic_ullong used_bits[USED_WORDS];
static struct thread_hooks hooks;
/* Registration and removal are rare; one lock keeps slot claims simple. */
static struct rt_mutex registry_lock = RT_MUTEX_INIT;

void threads_set_hooks(const struct thread_hooks *h)
{
	if (h)
		hooks = *h;
	else
		rt_memset(&hooks, 0, sizeof(hooks));
}

static uint32_t slot_hash(int tid) { return ((uint32_t)tid * 2654435761u) % THREADS_MAX; }

static bool slot_used(uint32_t s)
{
	return (atomic_load_explicit(&used_bits[s / 64], memory_order_acquire) >> (s % 64)) & 1u;
}

int threads_next_used(int from) { return rt_bitmap_next(used_bits, USED_WORDS, from); }

int threads_find(int tid)
{
	uint32_t h = slot_hash(tid);
	for (uint32_t i = 0; i < THREADS_MAX; i++) {
		uint32_t s = (h + i) % THREADS_MAX;
		if (atomic_load(&thread_slots[s].tid) == tid)
			return (int)s;
		/* A claim sets the bit before the tid: a clear bit ends the chain. */
		if (!slot_used(s))
			break;
	}
	return -1;
}

int threads_register(int tid, bool self, uint64_t stack_lo, uint64_t stack_hi)
{
	if (tid <= 0)
		return -1;
	rt_mutex_lock(&registry_lock);
	int slot = threads_find(tid);
	bool reused = slot >= 0;
	if (!reused) {
		uint32_t h = slot_hash(tid);
		for (uint32_t i = 0; i < THREADS_MAX && slot < 0; i++) {
			uint32_t s = (h + i) % THREADS_MAX;
			if (atomic_load(&thread_slots[s].tid) == 0) {
				struct thread_slot *t = &thread_slots[s];
				atomic_store(&t->timer_id, -1);
				t->cpu_carried_ns = 0;
				t->stack_lo = t->stack_hi = 0;
				atomic_store(&t->context_slot, -1);
				t->name[0] = 0;
				t->name_read_ns = 0;
				t->scan_mark = true;
				atomic_fetch_or(&used_bits[s / 64], 1ull << (s % 64));
				atomic_store(&t->tid, tid);
				slot = (int)s;
			}
		}
	}
	if (slot >= 0) {
		thread_slots[slot].stack_lo = stack_lo;
		thread_slots[slot].stack_hi = stack_hi;
		thread_slots[slot].no_signals = self && !stack_fits_signals(stack_lo, rt_stack_pointer());
	}
	rt_mutex_unlock(&registry_lock);
	if (slot < 0) {
		rt_log_once(RT_LOG_WARN, "more than %d threads: the newest are not profiled", THREADS_MAX);
		return -1;
	}
	if (thread_slots[slot].no_signals)
		rt_log_once(RT_LOG_INFO, "a thread's stack is too small for a signal frame: it is "
					 "not CPU-profiled, and wall-profiled only while blocked");
	/* A reused tid is a new thread: the removed hook releases the old
	 * thread's resources before the added hook sets up the new one. */
	if (reused && hooks.removed)
		hooks.removed(slot, tid);
	if (hooks.added)
		hooks.added(slot, tid, self);
	return slot;
}

void threads_unregister(int slot, int tid)
{
	if (slot < 0 || slot >= THREADS_MAX)
		return;
	struct thread_slot *t = &thread_slots[slot];
	if (atomic_load(&t->tid) != tid)
		return;
	if (hooks.removed)
		hooks.removed(slot, tid);
	rt_mutex_lock(&registry_lock);
	int expected = tid;
	(void)atomic_compare_exchange_strong(&t->tid, &expected, 0);
	rt_mutex_unlock(&registry_lock);
}


int threads_scan(void)
{
	struct rt_dir dir;
	long err = rt_dir_open(&dir, AT_FDCWD, "/proc/self/task", TASK_DIR_READS_MAX);
	if (err != 0)
		return (int)err;
	for (int s = threads_next_used(0); s >= 0; s = threads_next_used(s + 1))
		thread_slots[s].scan_mark = false;
	int live = 0;
	for (const char *name; (name = rt_dir_next(&dir)) != NULL;) {
		uint64_t tid;
		if (!rt_parse_u64(name, rt_strnlen(name, 16), &tid) || tid > 0x7fffffff)
			continue;
		if (thread_is_own((int)tid))
			continue;
		int slot = threads_find((int)tid);
		if (slot < 0)
			slot = threads_register((int)tid, false, 0, 0);
		if (slot >= 0) {
			thread_slots[slot].scan_mark = true;
			live++;
		}
	}
	rt_dir_close(&dir);
	if (dir.error != 0)
		return (int)dir.error; /* a partial listing must not retire the others */
	for (int s = threads_next_used(0); s >= 0; s = threads_next_used(s + 1)) {
		int tid = atomic_load(&thread_slots[s].tid);
		if (tid && !thread_slots[s].scan_mark)
			threads_unregister(s, tid);
	}
	return live;
}

const char *threads_name(int slot)
{
	if (slot < 0 || slot >= THREADS_MAX)
		return "";
	struct thread_slot *t = &thread_slots[slot];
	uint64_t now = rt_monotonic_ns();
	if (t->name_read_ns == 0 || now - t->name_read_ns > NAME_REFRESH_NS) {
		char path[64], name[32];
		rt_snprintf(path, sizeof(path), "/proc/self/task/%d/comm", atomic_load(&t->tid));
		long n = rt_read_file(path, name, sizeof(name));
		if (n > 0) {
			if (name[n - 1] == '\n')
				name[n - 1] = 0;
			rt_strlcpy(t->name, name, sizeof(t->name));
		}
		t->name_read_ns = now;
	}
	return t->name;
}

void threads_reset(void)
{
	rt_mutex_reset(&registry_lock);
	for (int s = threads_next_used(0); s >= 0; s = threads_next_used(s + 1)) {
		if (atomic_load(&thread_slots[s].tid))
			atomic_store(&thread_slots[s].tid, 0);
		if (atomic_load(&thread_slots[s].timer_id) != -1)
			atomic_store(&thread_slots[s].timer_id, -1);
	}
	/* Every slot is free now: claims start the chains afresh. */
	for (int w = 0; w < USED_WORDS; w++)
		if (atomic_load(&used_bits[w]))
			atomic_store(&used_bits[w], 0);
}
