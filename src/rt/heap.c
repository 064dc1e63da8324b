/* Our own heap: power-of-two size classes carved from mmap'd arenas, with a
 * free list per class; large blocks are mapped directly.  One mutex guards
 * the small-block state.  Never called from a signal handler. */
#include "rt/rt.h"
#include "rt/sys.h"

#define HEAP_MIN_SHIFT 4u  /* 16-byte blocks */
#define HEAP_MAX_SHIFT 16u /* 64 KiB: larger goes straight to mmap */
#define HEAP_CLASSES (HEAP_MAX_SHIFT - HEAP_MIN_SHIFT + 1u)
#define HEAP_ARENA_SIZE (1u << 20)
#define HEAP_HEADER 16u
#define HEAP_MAGIC_SMALL 0x5357534du
#define HEAP_MAGIC_LARGE 0x5357534cu
#define PAGE_SIZE_BYTES 4096u

/* Precedes every block; keeps the payload 16-byte aligned. */
struct heap_header {
	uint32_t magic;
	uint32_t class_index; /* small blocks */
	uint64_t map_size;    /* large blocks: bytes mapped including header */
};

struct heap_free_block {
	struct heap_free_block *next;
};

/* Large blocks freed while a keep scope is open (rt_heap_keep_begin) stay
 * mapped, up to this many and bytes, for the next large rt_malloc of about
 * their size: a fresh page costs a fault and the kernel's zeroing (about
 * 1.5 us on a VM), a kept one a memset at most. */
#define HEAP_KEEP_SLOTS 8u
#define HEAP_KEEP_BYTES ((size_t)1 << 20)

struct heap_kept {
	struct heap_header *h; /* NULL: empty slot */
	size_t map_size;
};

static struct {
	struct rt_mutex lock;
	struct heap_free_block *free_lists[HEAP_CLASSES];
	uint8_t *arena_cursor;
	size_t arena_left;
	atomic_size_t mapped;
	/* Under lock: */
	uint32_t keep_scopes; /* open keep scopes */
	size_t kept_bytes;
	struct heap_kept kept[HEAP_KEEP_SLOTS];
} heap;

static size_t round_pages(size_t n) { return (n + PAGE_SIZE_BYTES - 1) & ~(size_t)(PAGE_SIZE_BYTES - 1); }

#ifdef RT_FAULT_INJECTION
/* Test builds: allocation number `fail_at` (1-based, counted over
 * rt_malloc and rt_pages_alloc calls since the last rt_heap_fail_at) fails,
 * and every later one too when persistent.  `live` counts blocks and page
 * runs not yet freed, for leak checks. */
static struct {
	atomic_ulong count;
	atomic_ulong fail_at; /* 0: never */
	atomic_bool persistent;
	atomic_long live;
} fault;

void rt_heap_fail_at(uint64_t n, bool persistent)
{
	atomic_store(&fault.count, 0);
	atomic_store(&fault.persistent, persistent);
	atomic_store(&fault.fail_at, n);
}

uint64_t rt_heap_alloc_count(void) { return atomic_load(&fault.count); }
long rt_heap_live_allocations(void) { return atomic_load(&fault.live); }

static bool fault_fails(void)
{
	uint64_t n = atomic_fetch_add(&fault.count, 1) + 1;
	uint64_t at = atomic_load(&fault.fail_at);
	return at != 0 && (n == at || (n > at && atomic_load(&fault.persistent)));
}
#define FAULT_FAILS() fault_fails()
#define FAULT_LIVE(delta) atomic_fetch_add(&fault.live, (delta))
#else
#define FAULT_FAILS() false
#define FAULT_LIVE(delta) ((void)0)
#endif

/* Whole pages from the kernel, without the fault hook (the small-block
 * arenas come from here: a failure is injected per rt_malloc instead). */
static void *pages_map(size_t size)
{
	if (size == 0 || size > ((size_t)1 << 46))
		return NULL;
	size = round_pages(size);
	void *p = sys_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (SYS_IS_ERR(p))
		return NULL;
	atomic_fetch_add(&heap.mapped, size);
	return p;
}

static void pages_unmap(void *p, size_t size)
{
	size = round_pages(size);
	if (sys_munmap(p, size) == 0)
		atomic_fetch_sub(&heap.mapped, size);
}

void *rt_pages_alloc(size_t size)
{
	if (FAULT_FAILS())
		return NULL;
	void *p = pages_map(size);
	if (p)
		FAULT_LIVE(1);
	return p;
}

void rt_pages_free(void *p, size_t size)
{
	if (!p)
		return;
	FAULT_LIVE(-1);
	pages_unmap(p, size);
}

void *rt_shared_pages_alloc(size_t size)
{
	void *p = sys_mmap(NULL, round_pages(size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			   -1, 0);
	return SYS_IS_ERR(p) ? NULL : p;
}

void rt_shared_pages_free(void *p, size_t size)
{
	if (p)
		(void)sys_munmap(p, round_pages(size));
}

size_t rt_heap_mapped_bytes(void) { return atomic_load(&heap.mapped); }

static unsigned class_for(size_t total)
{
	unsigned shift = HEAP_MIN_SHIFT;
	while (((size_t)1 << shift) < total)
		shift++;
	return shift - HEAP_MIN_SHIFT;
}

static void *small_alloc(unsigned cls)
{
	size_t block = (size_t)1 << (cls + HEAP_MIN_SHIFT);
	struct heap_free_block *b = heap.free_lists[cls];
	if (b) {
		heap.free_lists[cls] = b->next;
		return b;
	}
	if (heap.arena_left < block) {
		/* The tail of the old arena is abandoned: at most one block's worth. */
		uint8_t *arena = pages_map(HEAP_ARENA_SIZE);
		if (!arena)
			return NULL;
		heap.arena_cursor = arena;
		heap.arena_left = HEAP_ARENA_SIZE;
	}
	void *p = heap.arena_cursor;
	heap.arena_cursor += block;
	heap.arena_left -= block;
	return p;
}

/* A kept block of at least map bytes and at most twice that, taken out of
 * the keep; NULL if none. */
static struct heap_header *kept_take(size_t map)
{
	struct heap_header *h = NULL;
	rt_mutex_lock(&heap.lock);
	uint32_t best = HEAP_KEEP_SLOTS;
	for (uint32_t i = 0; i < HEAP_KEEP_SLOTS; i++) {
		size_t have = heap.kept[i].map_size;
		if (heap.kept[i].h != NULL && have >= map && have / 2 <= map &&
		    (best == HEAP_KEEP_SLOTS || have < heap.kept[best].map_size))
			best = i;
	}
	if (best < HEAP_KEEP_SLOTS) {
		h = heap.kept[best].h;
		heap.kept_bytes -= heap.kept[best].map_size;
		heap.kept[best].h = NULL;
	}
	rt_mutex_unlock(&heap.lock);
	return h;
}

/* Keeps the freed large block h if a keep scope is open and there is room. */
static bool kept_put(struct heap_header *h)
{
	bool kept = false;
	rt_mutex_lock(&heap.lock);
	if (heap.keep_scopes > 0 && h->map_size <= HEAP_KEEP_BYTES - heap.kept_bytes) {
		for (uint32_t i = 0; i < HEAP_KEEP_SLOTS && !kept; i++) {
			if (heap.kept[i].h == NULL) {
				heap.kept[i] = (struct heap_kept){h, h->map_size};
				heap.kept_bytes += h->map_size;
				kept = true;
			}
		}
	}
	rt_mutex_unlock(&heap.lock);
	return kept;
}

void rt_heap_keep_begin(void)
{
	rt_mutex_lock(&heap.lock);
	heap.keep_scopes++;
	rt_mutex_unlock(&heap.lock);
}

void rt_heap_keep_end(void)
{
	struct heap_kept out[HEAP_KEEP_SLOTS];
	uint32_t n = 0;
	rt_mutex_lock(&heap.lock);
	if (heap.keep_scopes > 0)
		heap.keep_scopes--;
	if (heap.keep_scopes == 0) {
		for (uint32_t i = 0; i < HEAP_KEEP_SLOTS; i++) {
			if (heap.kept[i].h != NULL)
				out[n++] = heap.kept[i];
			heap.kept[i].h = NULL;
		}
		heap.kept_bytes = 0;
	}
	rt_mutex_unlock(&heap.lock);
	for (uint32_t i = 0; i < n; i++)
		pages_unmap(out[i].h, out[i].map_size);
}

/* A large block for total bytes; *fresh: straight from the kernel (zero). */
static void *large_alloc(size_t total, bool *fresh)
{
	size_t map = round_pages(total);
	struct heap_header *h = kept_take(map);
	*fresh = h == NULL;
	if (h == NULL) {
		h = pages_map(map);
		if (!h)
			return NULL;
		h->map_size = map;
	}
	h->magic = HEAP_MAGIC_LARGE;
	h->class_index = 0;
	FAULT_LIVE(1);
	return (uint8_t *)h + HEAP_HEADER;
}

void *rt_malloc(size_t size)
{
	if (size > ((size_t)1 << 46) || FAULT_FAILS())
		return NULL;
	size_t total = size + HEAP_HEADER;
	struct heap_header *h;
	if (total > ((size_t)1 << HEAP_MAX_SHIFT)) {
		bool fresh;
		return large_alloc(total, &fresh);
	}
	unsigned cls = class_for(total);
	rt_mutex_lock(&heap.lock);
	h = small_alloc(cls);
	rt_mutex_unlock(&heap.lock);
	if (!h)
		return NULL;
	h->magic = HEAP_MAGIC_SMALL;
	h->class_index = cls;
	h->map_size = 0;
	FAULT_LIVE(1);
	return (uint8_t *)h + HEAP_HEADER;
}

static struct heap_header *header_of(void *p)
{
	return (struct heap_header *)(void *)((uint8_t *)p - HEAP_HEADER);
}

static size_t usable_size(const struct heap_header *h)
{
	if (h->magic == HEAP_MAGIC_LARGE)
		return h->map_size - HEAP_HEADER;
	return ((size_t)1 << (h->class_index + HEAP_MIN_SHIFT)) - HEAP_HEADER;
}

void rt_free(void *p)
{
	if (!p)
		return;
	struct heap_header *h = header_of(p);
	if (h->magic == HEAP_MAGIC_LARGE) {
		FAULT_LIVE(-1);
		if (!kept_put(h))
			pages_unmap(h, h->map_size);
		return;
	}
	if (h->magic != HEAP_MAGIC_SMALL || h->class_index >= HEAP_CLASSES) {
		rt_log_once(RT_LOG_ERROR, "internal error: rt_free of a pointer not from our heap");
		return;
	}
	FAULT_LIVE(-1);
	unsigned cls = h->class_index;
	h->magic = 0;
	struct heap_free_block *b = (struct heap_free_block *)(void *)h;
	rt_mutex_lock(&heap.lock);
	b->next = heap.free_lists[cls];
	heap.free_lists[cls] = b;
	rt_mutex_unlock(&heap.lock);
}

void *rt_calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	size_t total = n * size;
	if (total <= SIZE_MAX - HEAP_HEADER && total + HEAP_HEADER > ((size_t)1 << HEAP_MAX_SHIFT) &&
	    total <= ((size_t)1 << 46)) {
		if (FAULT_FAILS())
			return NULL;
		bool fresh;
		void *p = large_alloc(total + HEAP_HEADER, &fresh);
		if (p != NULL && !fresh)
			rt_memset(p, 0, total); /* fresh mmap'd blocks are already zero */
		return p;
	}
	void *p = rt_malloc(total);
	if (p)
		rt_memset(p, 0, total);
	return p;
}

void *rt_realloc(void *p, size_t size)
{
	if (!p)
		return rt_malloc(size);
	if (size == 0) {
		rt_free(p);
		return NULL;
	}
	size_t old = usable_size(header_of(p));
	if (size <= old && header_of(p)->magic == HEAP_MAGIC_SMALL)
		return p;
	void *q = rt_malloc(size);
	if (!q)
		return NULL;
	rt_memcpy(q, p, RT_MIN(old, size));
	rt_free(p);
	return q;
}

char *rt_strndup(const char *s, size_t n)
{
	size_t len = rt_strnlen(s, n);
	char *d = rt_malloc(len + 1);
	if (!d)
		return NULL;
	rt_memcpy(d, s, len);
	d[len] = 0;
	return d;
}

char *rt_strdup(const char *s) { return rt_strndup(s, SIZE_MAX); }

void rt_heap_fork_prepare(void) { rt_mutex_lock(&heap.lock); }
void rt_heap_fork_parent(void) { rt_mutex_unlock(&heap.lock); }
/* The lock was taken by the prepare hook on this very thread (or, if fork
 * bypassed the hooks, by a thread that no longer exists): reset it. */
void rt_heap_after_fork_child(void)
{
	rt_mutex_reset(&heap.lock);
	/* A keep scope open in the parent belongs to a thread the child does
	 * not have: the child keeps nothing. */
	heap.keep_scopes = 1;
	rt_heap_keep_end();
}
