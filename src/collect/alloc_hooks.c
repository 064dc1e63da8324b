/* The interposed malloc family and C++ operator new/delete.  Exported; only
 * in the .so (this file defines malloc, so it never goes into libcore.a).
 *
 * Every entry point forwards to the next definition in the lookup order
 * (dlsym(RTLD_NEXT)), so glibc, musl, jemalloc or tcmalloc keep doing the
 * real work.  While sampling is off, malloc is one flag test and an
 * indirect jump; free is one flag test and a jump (while no arena block
 * exists: alloc.h ALLOC_FREE_ARENA).
 *
 * Bootstrap: the forwarding pointers of malloc, free, calloc and realloc
 * start at boot_* functions that resolve the next definitions on first use.
 * Until that is done (and while dlsym itself allocates, as glibc's does),
 * allocations come from a static arena; frees of arena pointers are
 * ignored, realloc copies them out.
 */
#include "collect/alloc.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "unwind/unwind.h"

#define CALLER_RA() ((uintptr_t)__builtin_return_address(0))

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_fn)(size_t, size_t);
typedef size_t (*usable_size_fn)(void *);
/* operator new variants: (size), (size, nothrow), (size, align), (size, align, nothrow) */
typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
/* operator delete variants: (p), (p, size or align), (p, nothrow), (p, size, align),
 * (p, align, nothrow) */
typedef void (*del_fn)(void *);
typedef void (*del_z_fn)(void *, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_zz_fn)(void *, size_t, size_t);
typedef void (*del_z_nt_fn)(void *, size_t, const void *);


/* The next definitions, written once by resolve() and read on every call:
 * malloc's, free's, calloc's and realloc's in alloc_hot, beside the flags
 * (one cache line, the bootstrap functions until resolved), the others
 * here. */
static struct {
	_Atomic(reallocarray_fn) reallocarray;
	_Atomic(posix_memalign_fn) posix_memalign;
	_Atomic(aligned_fn) aligned_alloc;
	_Atomic(aligned_fn) memalign;
	_Atomic(malloc_fn) valloc;
	_Atomic(malloc_fn) pvalloc;
	_Atomic(usable_size_fn) malloc_usable_size;
} next;

#define NEXT(field) atomic_load_explicit(&next.field, memory_order_relaxed)
#define NEXT_HOT(field) atomic_load_explicit(&alloc_hot.next_##field, memory_order_relaxed)

#define RESOLVE_NONE 0
#define RESOLVE_BUSY 1
#define RESOLVE_DONE 2
static atomic_int resolve_state;

/* dlsym returns a data pointer; POSIX specifies its conversion to a function
 * pointer, done here without a cast between the two kinds.  A name that is
 * not found leaves `place` as it was. */
#define LOOKUP(type, place, name)                                              \
	do {                                                                   \
		void *sym_ = hook_next(name);                                \
		type fn_;                                                      \
		__builtin_memcpy(&fn_, &sym_, sizeof(sym_));                   \
		if (fn_)                                                       \
			atomic_store(&(place), fn_);                           \
	} while (0)

/* True once the next definitions are known.  The first caller resolves;
 * a caller that finds resolution in progress (dlsym allocating, or another
 * thread) gets false and uses the arena. */
static bool resolve(void)
{
	int s = atomic_load_explicit(&resolve_state, memory_order_acquire);
	if (s == RESOLVE_DONE)
		return true;
	if (s == RESOLVE_BUSY || !atomic_compare_exchange_strong(&resolve_state, &s, RESOLVE_BUSY))
		return atomic_load(&resolve_state) == RESOLVE_DONE;
	void *m = hook_next("malloc");
	void *f = hook_next("free");
	if (!m || !f) {
		/* No allocator to forward to: keep the arena (bounded). */
		atomic_store(&resolve_state, RESOLVE_NONE);
		rt_log_once(RT_LOG_ERROR, "allocation hooks: no malloc/free to forward to");
		return false;
	}
	LOOKUP(calloc_fn, alloc_hot.next_calloc, "calloc");
	LOOKUP(realloc_fn, alloc_hot.next_realloc, "realloc");
	LOOKUP(reallocarray_fn, next.reallocarray, "reallocarray");
	LOOKUP(posix_memalign_fn, next.posix_memalign, "posix_memalign");
	LOOKUP(aligned_fn, next.aligned_alloc, "aligned_alloc");
	LOOKUP(aligned_fn, next.memalign, "memalign");
	LOOKUP(malloc_fn, next.valloc, "valloc");
	LOOKUP(malloc_fn, next.pvalloc, "pvalloc");
	LOOKUP(usable_size_fn, next.malloc_usable_size, "malloc_usable_size");
	/* malloc and free last: from then on the fast paths bypass the boot_*. */
	LOOKUP(free_fn, alloc_hot.next_free, "free");
	LOOKUP(malloc_fn, alloc_hot.next_malloc, "malloc");
	atomic_store_explicit(&resolve_state, RESOLVE_DONE, memory_order_release);
	return true;
}

static inline bool ready(void)
{
	return RT_LIKELY(atomic_load_explicit(&resolve_state, memory_order_acquire) == RESOLVE_DONE) ||
	       resolve();
}

static inline bool sampling(void)
{
	return RT_UNLIKELY(atomic_load_explicit(&alloc_hot.sampling, memory_order_relaxed) != 0);
}

/* ---- bootstrap arena ---- */

#define BOOT_BYTES (256u * 1024u)
#define BOOT_MAX_ALIGN 4096u
#define BOOT_HEADER 16u

static _Alignas(4096) unsigned char boot_arena[BOOT_BYTES];
static atomic_size_t boot_used;

static inline bool in_boot(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_arena < BOOT_BYTES;
}

/* What free and delete do with p before forwarding it (alloc.h
 * ALLOC_FREE_*): one load while there is nothing to check. */
enum free_action { FREE_FORWARD, FREE_IGNORE, FREE_RETIRE };

static inline enum free_action free_action_of(int checks, const void *p)
{
	if ((checks & ALLOC_FREE_ARENA) && in_boot(p))
		return FREE_IGNORE;
	if ((checks & ALLOC_FREE_RETIRE) && alloc_live_filter_maybe(p))
		return FREE_RETIRE;
	return FREE_FORWARD;
}

static inline enum free_action free_action(const void *p)
{
	int checks = atomic_load_explicit(&alloc_hot.free_checks, memory_order_relaxed);
	if (RT_LIKELY(checks == 0))
		return FREE_FORWARD;
	return free_action_of(checks, p);
}

/* Zeroed memory (the arena is never reused), or NULL when exhausted. */
static void *boot_alloc(size_t n, size_t align)
{
	if (align < BOOT_HEADER)
		align = BOOT_HEADER;
	if (n > BOOT_BYTES || align > BOOT_MAX_ALIGN || (align & (align - 1)) != 0)
		return NULL;
	/* Before any block exists: free then tests every pointer against the arena. */
	if (!(atomic_load_explicit(&alloc_hot.free_checks, memory_order_relaxed) & ALLOC_FREE_ARENA))
		atomic_fetch_or(&alloc_hot.free_checks, ALLOC_FREE_ARENA);
	size_t need = (BOOT_HEADER + align + n + 15u) & ~(size_t)15u;
	size_t off = atomic_fetch_add(&boot_used, need);
	if (off > BOOT_BYTES || need > BOOT_BYTES - off)
		return NULL;
	uintptr_t base = (uintptr_t)boot_arena + off + BOOT_HEADER;
	uintptr_t p = (base + align - 1) & ~(uintptr_t)(align - 1);
	size_t *size = (size_t *)(p - BOOT_HEADER);
	*size = n;
	return (void *)p;
}

static size_t boot_size(const void *p)
{
	return *(const size_t *)((uintptr_t)p - BOOT_HEADER);
}

/* Copies an arena block into q (n bytes requested). */
static void boot_copy_out(void *q, const void *p, size_t n)
{
	size_t old = boot_size(p);
	rt_memcpy(q, p, old < n ? old : n);
}

void *alloc_boot_malloc(size_t n)
{
	if (resolve())
		return NEXT_HOT(malloc)(n);
	return boot_alloc(n, BOOT_HEADER);
}

void alloc_boot_free(void *p)
{
	if (!in_boot(p) && resolve())
		NEXT_HOT(free)(p);
}

void *alloc_boot_calloc(size_t n, size_t m)
{
	size_t bytes;
	if (resolve()) {
		calloc_fn f = NEXT_HOT(calloc);
		if (f != alloc_boot_calloc)
			return f(n, m);
		/* The next library has malloc but no calloc. */
		if (__builtin_mul_overflow(n, m, &bytes))
			return NULL;
		void *p = NEXT_HOT(malloc)(bytes);
		if (p)
			rt_memset(p, 0, bytes);
		return p;
	}
	return __builtin_mul_overflow(n, m, &bytes) ? NULL : boot_alloc(bytes, BOOT_HEADER);
}

void *alloc_boot_realloc(void *p, size_t n)
{
	if (resolve() && NEXT_HOT(realloc) != alloc_boot_realloc)
		return NEXT_HOT(realloc)(p, n);
	void *q = boot_alloc(n, BOOT_HEADER);
	if (q && p && in_boot(p))
		boot_copy_out(q, p, n);
	return q;
}

/* ---- sampled paths: out of line, so the forwarding path stays short ---- */

static bool malloc_called_by_next_new(uintptr_t ra);

/* A thread whose countdown reached its sample point (t is its slot, no
 * other hook of the thread is active).  Called by the next plain operator
 * new, forwarded to with no mark, the stack starts at that operator's
 * caller, as it does when the operator is sampled itself. */
__attribute__((noinline)) static void *malloc_sample_now(struct alloc_thread *t, size_t n,
							 uintptr_t ra)
{
	(void)alloc_enter(t, rt_stack_pointer());
	void *p = NEXT_HOT(malloc)(n);
	alloc_sample_skipping(t, p, n, ra, malloc_called_by_next_new(ra) ? 1u : 0u);
	alloc_leave(t);
	return p;
}

/* First call of a thread, a nested call, or a slot off its home. */
__attribute__((noinline)) static void *malloc_slow(size_t n, uintptr_t ra)
{
	struct alloc_thread *t = alloc_thread_self();
	if (!t || !alloc_countdown(t, n, rt_stack_pointer()))
		return NEXT_HOT(malloc)(n);
	return malloc_sample_now(t, n, ra);
}

/* Opens an outermost hook: the thread's slot, or NULL when the call is
 * nested or the thread has no slot (then only forward). */
static inline struct alloc_thread *outer_begin(uintptr_t sp)
{
	struct alloc_thread *t = alloc_thread_self();
	if (!t || !alloc_enter(t, sp))
		return NULL;
	return t;
}

__attribute__((noinline)) static void *calloc_sampled(size_t n, size_t m, uintptr_t ra)
{
	uintptr_t sp = rt_stack_pointer();
	struct alloc_thread *t = outer_begin(sp);
	if (!t)
		return NEXT_HOT(calloc)(n, m);
	size_t bytes = 0;
	bool sampled = !__builtin_mul_overflow(n, m, &bytes) && alloc_countdown(t, bytes, sp);
	void *p = NEXT_HOT(calloc)(n, m);
	if (sampled)
		alloc_sample(t, p, bytes, ra);
	alloc_leave(t);
	return p;
}

/* reallocarray through realloc, for a next library without it. */
static void *reallocarray_emulated(void *p, size_t n, size_t m)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, m, &bytes))
		return NULL;
	return NEXT_HOT(realloc)(p, bytes);
}

/* realloc and reallocarray: the old block is retired before the call (it
 * may be freed inside), restored if the call fails. */
__attribute__((noinline)) static void *realloc_slow(void *p, size_t n, size_t m, bool array,
						    uintptr_t ra)
{
	struct alloc_live_entry saved;
	bool had = p && alloc_live_maybe(p) && alloc_live_retire(p, &saved);
	size_t bytes = 0;
	bool overflow = __builtin_mul_overflow(n, m, &bytes);
	uintptr_t sp = rt_stack_pointer();
	struct alloc_thread *t = sampling() ? outer_begin(sp) : NULL;
	bool sampled = t && !overflow && bytes && alloc_countdown(t, bytes, sp);
	reallocarray_fn ra_next = NEXT(reallocarray);
	void *q;
	if (!array)
		q = NEXT_HOT(realloc)(p, n);
	else
		q = ra_next ? ra_next(p, n, m) : reallocarray_emulated(p, n, m);
	if (had) {
		if (!q && bytes)
			alloc_live_restore(&saved);
		else
			alloc_live_drop(&saved);
	}
	if (sampled)
		alloc_sample(t, q, bytes, ra);
	if (t)
		alloc_leave(t);
	return q;
}

/* The aligned family, one shape: call(align, n) through `fn`. */
enum aligned_kind { AL_POSIX, AL_ALIGNED, AL_MEMALIGN, AL_VALLOC, AL_PVALLOC };

#define ERR_NOMEM 12 /* ENOMEM, for posix_memalign's return value */

static void *aligned_forward(enum aligned_kind kind, size_t align, size_t n, int *err)
{
	void *p = NULL;
	*err = 0;
	switch (kind) {
	case AL_POSIX: {
		posix_memalign_fn f = NEXT(posix_memalign);
		*err = f ? f(&p, align, n) : ERR_NOMEM;
		return p;
	}
	case AL_ALIGNED: {
		aligned_fn f = NEXT(aligned_alloc);
		return f ? f(align, n) : NULL;
	}
	case AL_MEMALIGN: {
		aligned_fn f = NEXT(memalign);
		return f ? f(align, n) : NULL;
	}
	case AL_VALLOC: {
		malloc_fn f = NEXT(valloc);
		return f ? f(n) : NULL;
	}
	case AL_PVALLOC: {
		malloc_fn f = NEXT(pvalloc);
		return f ? f(n) : NULL;
	}
	}
	return NULL;
}

__attribute__((noinline)) static void *aligned_sampled(enum aligned_kind kind, size_t align,
						       size_t n, int *err, uintptr_t ra)
{
	uintptr_t sp = rt_stack_pointer();
	struct alloc_thread *t = outer_begin(sp);
	if (!t)
		return aligned_forward(kind, align, n, err);
	bool sampled = alloc_countdown(t, n, sp);
	void *p = aligned_forward(kind, align, n, err);
	if (sampled)
		alloc_sample(t, p, n, ra);
	alloc_leave(t);
	return p;
}

static void *aligned_entry(enum aligned_kind kind, size_t align, size_t n, int *err, uintptr_t ra)
{
	if (!ready()) {
		size_t a = kind == AL_VALLOC || kind == AL_PVALLOC ? BOOT_MAX_ALIGN : align;
		void *p = boot_alloc(n, a);
		*err = p ? 0 : ERR_NOMEM;
		return p;
	}
	if (!sampling())
		return aligned_forward(kind, align, n, err);
	return aligned_sampled(kind, align, n, err, ra);
}

/* ---- the C library entry points ---- */

SW_EXPORT void *malloc(size_t n);
SW_EXPORT void free(void *p);
SW_EXPORT void *calloc(size_t n, size_t m);
SW_EXPORT void *realloc(void *p, size_t n);
SW_EXPORT void *reallocarray(void *p, size_t n, size_t m);
SW_EXPORT int posix_memalign(void **out, size_t align, size_t n);
SW_EXPORT void *aligned_alloc(size_t align, size_t n);
SW_EXPORT void *memalign(size_t align, size_t n);
SW_EXPORT void *valloc(size_t n);
SW_EXPORT void *pvalloc(size_t n);
SW_EXPORT size_t malloc_usable_size(void *p);

SW_EXPORT void *malloc(size_t n)
{
	if (sampling()) {
		struct alloc_thread *t = alloc_thread_mine();
		if (RT_LIKELY(t != NULL)) {
			if (RT_LIKELY(t->outer_sp == 0)) {
				/* The unsampled path: a subtraction and a branch. */
				t->countdown -= (int64_t)n;
				if (RT_LIKELY(t->countdown > 0))
					return NEXT_HOT(malloc)(n);
				return malloc_sample_now(t, n, CALLER_RA());
			}
			/* Inside another hook of this thread (operator new's). */
			if (rt_stack_pointer() < t->outer_sp)
				return NEXT_HOT(malloc)(n);
		}
		return malloc_slow(n, CALLER_RA());
	}
	return NEXT_HOT(malloc)(n);
}

/* A possibly sampled pointer. */
__attribute__((noinline)) static void free_slow(void *p)
{
	(void)alloc_live_retire(p, NULL);
	NEXT_HOT(free)(p);
}

/* free's checks of p, after which it forwards p if it should. */
static inline void free_checked(int checks, void *p)
{
	enum free_action a = free_action_of(checks, p);
	if (RT_UNLIKELY(a != FREE_FORWARD)) {
		if (a == FREE_RETIRE)
			free_slow(p);
		return;
	}
	NEXT_HOT(free)(p);
}

/* A free with checks other than the live filter's alone: the bootstrap
 * arena's range, or an operator delete learning whether it reaches here
 * with its pointer (noted in the thread's slot first). */
__attribute__((noinline)) static void free_unusual(int checks, void *p)
{
	if (checks >= ALLOC_FREE_LEARNING) {
		struct alloc_thread *t = alloc_thread_mine();
		if (t)
			t->free_noted = (uint32_t)(uintptr_t)p;
	}
	free_checked(checks, p);
}

SW_EXPORT void free(void *p)
{
	int checks = atomic_load_explicit(&alloc_hot.free_checks, memory_order_relaxed);
	if (RT_LIKELY(checks == 0)) {
		NEXT_HOT(free)(p);
		return;
	}
	if (RT_UNLIKELY(checks != ALLOC_FREE_RETIRE)) {
		free_unusual(checks, p);
		return;
	}
	if (RT_UNLIKELY(alloc_live_filter_maybe(p))) {
		free_slow(p);
		return;
	}
	NEXT_HOT(free)(p);
}

SW_EXPORT void *calloc(size_t n, size_t m)
{
	if (sampling() && ready())
		return calloc_sampled(n, m, CALLER_RA());
	return NEXT_HOT(calloc)(n, m);
}

/* realloc and the aligned family while nothing is sampled or checked:
 * a few loads and a jump to the next definition, with no frame; anything
 * else goes to the full path by a sibling call, so CALLER_RA there is still
 * the program's.  True while nothing is sampled (tested first: a sampled
 * call leaves at once) once the next definitions are known (loaded after
 * the acquire). */
static inline bool forwarding(void)
{
	return !sampling() && atomic_load_explicit(&resolve_state, memory_order_acquire) == RESOLVE_DONE;
}

__attribute__((noinline)) static void *realloc_full(void *p, size_t n)
{
	if (RT_UNLIKELY(in_boot(p))) {
		void *q = malloc(n);
		if (q)
			boot_copy_out(q, p, n);
		return q;
	}
	if ((sampling() || alloc_live_maybe(p)) && ready())
		return realloc_slow(p, n, 1, false, CALLER_RA());
	return NEXT_HOT(realloc)(p, n);
}

SW_EXPORT void *realloc(void *p, size_t n)
{
	int checks = atomic_load_explicit(&alloc_hot.free_checks, memory_order_relaxed);
	if (RT_LIKELY(forwarding() && !in_boot(p) && !(checks & ALLOC_FREE_RETIRE)))
		return NEXT_HOT(realloc)(p, n);
	return realloc_full(p, n);
}

SW_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t bytes;
	if (!ready() || in_boot(p))
		return __builtin_mul_overflow(n, m, &bytes) ? NULL : realloc(p, bytes);
	if (sampling() || alloc_live_maybe(p))
		return realloc_slow(p, n, m, true, CALLER_RA());
	reallocarray_fn f = NEXT(reallocarray);
	return f ? f(p, n, m) : reallocarray_emulated(p, n, m);
}

__attribute__((noinline)) static int posix_memalign_full(void **out, size_t align, size_t n)
{
	int err = 0;
	void *p = aligned_entry(AL_POSIX, align, n, &err, CALLER_RA());
	if (err == 0)
		*out = p;
	return err;
}

SW_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	posix_memalign_fn f = forwarding() ? NEXT(posix_memalign) : NULL;
	if (RT_LIKELY(f != NULL))
		return f(out, align, n);
	return posix_memalign_full(out, align, n);
}

/* One of the aligned family but posix_memalign: `fn` is its type of next
 * definition, `args` its arguments (the last is the size n), `align` the
 * alignment aligned_entry is given. */
#define ALIGNED_HOOK(name, kind, fn, params, args, align)                                 \
	__attribute__((noinline)) static void *name##_full params                              \
	{                                                                                      \
		int err;                                                                       \
		return aligned_entry(kind, align, n, &err, CALLER_RA());                      \
	}                                                                                      \
	SW_EXPORT void *name params                                                            \
	{                                                                                      \
		fn f = forwarding() ? NEXT(name) : NULL;                                       \
		if (RT_LIKELY(f != NULL))                                                      \
			return f args;                                                         \
		return name##_full args;                                                       \
	}

ALIGNED_HOOK(aligned_alloc, AL_ALIGNED, aligned_fn, (size_t align, size_t n), (align, n), align)
ALIGNED_HOOK(memalign, AL_MEMALIGN, aligned_fn, (size_t align, size_t n), (align, n), align)
ALIGNED_HOOK(valloc, AL_VALLOC, malloc_fn, (size_t n), (n), 0)
ALIGNED_HOOK(pvalloc, AL_PVALLOC, malloc_fn, (size_t n), (n), 0)

SW_EXPORT size_t malloc_usable_size(void *p)
{
	if (in_boot(p))
		return boot_size(p);
	usable_size_fn f = ready() ? NEXT(malloc_usable_size) : NULL;
	return f ? f(p) : 0;
}

/* ---- C++ operator new and delete ----
 * Resolved on first use (libstdc++ may be loaded after us, by dlopen).  A
 * runtime's operator new usually calls malloc: that inner call is nested
 * and only forwards, so each allocation is counted once, at the operator.
 * Every operator is its own short function: while sampling is off, new is
 * a flag test, a load and a jump to the next operator; so is delete while
 * free has nothing to check, or once it learned that its next operator
 * frees through our free (which then checks). */

enum cxx_op {
	NEW, NEW_A, NEW_NT, NEW_A_NT, NEW_AL, NEW_A_AL, NEW_AL_NT, NEW_A_AL_NT,
	DEL, DEL_A, DEL_Z, DEL_A_Z, DEL_NT, DEL_A_NT, DEL_AL, DEL_A_AL, DEL_Z_AL, DEL_A_Z_AL,
	DEL_AL_NT, DEL_A_AL_NT, CXX_OPS
};

static const char *const cxx_names[CXX_OPS] = {
	[NEW] = "_Znwm",
	[NEW_A] = "_Znam",
	[NEW_NT] = "_ZnwmRKSt9nothrow_t",
	[NEW_A_NT] = "_ZnamRKSt9nothrow_t",
	[NEW_AL] = "_ZnwmSt11align_val_t",
	[NEW_A_AL] = "_ZnamSt11align_val_t",
	[NEW_AL_NT] = "_ZnwmSt11align_val_tRKSt9nothrow_t",
	[NEW_A_AL_NT] = "_ZnamSt11align_val_tRKSt9nothrow_t",
	[DEL] = "_ZdlPv",
	[DEL_A] = "_ZdaPv",
	[DEL_Z] = "_ZdlPvm",
	[DEL_A_Z] = "_ZdaPvm",
	[DEL_NT] = "_ZdlPvRKSt9nothrow_t",
	[DEL_A_NT] = "_ZdaPvRKSt9nothrow_t",
	[DEL_AL] = "_ZdlPvSt11align_val_t",
	[DEL_A_AL] = "_ZdaPvSt11align_val_t",
	[DEL_Z_AL] = "_ZdlPvmSt11align_val_t",
	[DEL_A_Z_AL] = "_ZdaPvmSt11align_val_t",
	[DEL_AL_NT] = "_ZdlPvSt11align_val_tRKSt9nothrow_t",
	[DEL_A_AL_NT] = "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

static _Atomic(void *) cxx_next[CXX_OPS];

/* The next operator `op` while one is known: one load. */
static inline void *cxx_known(enum cxx_op op)
{
	return atomic_load_explicit(&cxx_next[op], memory_order_acquire);
}

/* `var` (of function pointer type `type`) = the next operator `op`, looked
 * up if not known yet, or `fallback` while there is none. */
#define CXX_FN(type, var, op, fallback)                                        \
	type var = (fallback);                                                 \
	do {                                                                   \
		void *sym_ = hook_next_cached(&cxx_next[op], cxx_names[op]);   \
		if (sym_ != NULL)                                              \
			HOOK_FN(var, sym_);                                    \
	} while (0)

/* Without a next operator: what the C++ runtime's own ones do, minus the
 * new-handler loop and the exception. */
static void *new_fallback(size_t n) { return malloc(n ? n : 1); }
static void *new_nt_fallback(size_t n, const void *nt)
{
	(void)nt;
	return malloc(n ? n : 1);
}
static void *new_al_fallback(size_t n, size_t align) { return aligned_alloc(align, n); }
static void *new_al_nt_fallback(size_t n, size_t align, const void *nt)
{
	(void)nt;
	return aligned_alloc(align, n);
}

/* The path of an operator new while sampling is on or its next operator is
 * not known yet.  The operator marks itself as the thread's outermost hook
 * around the call (its inner malloc then only forwards), counts n down and
 * samples at the sample point.  An exception thrown by the next operator
 * (std::bad_alloc) unwinds through here: the nesting mark stays and heals
 * itself (alloc.h). */
static inline struct alloc_thread *new_begin(size_t n, bool *sampled)
{
	*sampled = false;
	if (!sampling())
		return NULL;
	uintptr_t sp = rt_stack_pointer();
	struct alloc_thread *t = outer_begin(sp);
	*sampled = t && alloc_countdown(t, n, sp);
	return t;
}

static inline void *new_end(struct alloc_thread *t, bool sampled, void *p, size_t n, uintptr_t ra)
{
	if (t) {
		if (sampled)
			alloc_sample(t, p, n, ra);
		alloc_leave(t);
	}
	return p;
}

/* Whether the next plain operator new (NEW, NEW_A) allocates through our
 * malloc, which then counts its bytes, learned on its first calls: from
 * CXX_THROUGH_MALLOC_KNOWN calls whose inner malloc counted exactly their
 * size on, an operator new whose bytes stay short of the thread's sample
 * point forwards with no mark (one count, by the inner malloc); a call
 * counted otherwise (a runtime that does not call malloc, or not only
 * once) makes it -1, and every call marks itself as before.  The bytes of
 * each allocation are counted once either way, so the sample points are
 * those of the same Poisson process. */
#define CXX_THROUGH_MALLOC_KNOWN 64
static atomic_int cxx_through_malloc[2];

static inline bool new_is_plain(enum cxx_op op) { return op == NEW || op == NEW_A; }

/* The calling thread's slot when an allocation of n bytes through malloc
 * stays short of its sample point and no hook of it is active; NULL
 * otherwise. */
static inline struct alloc_thread *new_short_of_sample(size_t n)
{
	struct alloc_thread *t = alloc_thread_mine();
	/* malloc counts max(n, 1) bytes; the countdown stays above 0. */
	if (t && t->outer_sp == 0 && t->countdown > 1 && n < (uint64_t)t->countdown - 1u)
		return t;
	return NULL;
}

/* The fast path of a plain operator new while sampling: true to forward
 * with no mark.  `operator new(n)` forwards whatever its size once learned:
 * its inner malloc samples at the sample point, and leaves the operator's
 * frame out of the stack (malloc_called_by_next_new).  `operator new[]`
 * only while short of the sample point: a runtime's new[] calls new (ours
 * again), so its inner malloc sits two of the runtime's frames down. */
static inline bool new_unmarked(enum cxx_op op, size_t n)
{
	if (atomic_load_explicit(&cxx_through_malloc[op - NEW], memory_order_relaxed) <
	    CXX_THROUGH_MALLOC_KNOWN)
		return false;
	return op == NEW || new_short_of_sample(n) != NULL;
}

/* The return address, inside the next operator new(n), of its call to
 * malloc, once seen (0: not yet). */
static _Atomic uintptr_t next_new_malloc_ra;

/* Whether ra (a malloc's return address) lies in the next operator new(n)
 * that forwards with no mark: the function its unwind tables place ra in
 * starts at that operator.  Only at a sample point. */
static bool malloc_called_by_next_new(uintptr_t ra)
{
	uintptr_t start = (uintptr_t)cxx_known(NEW);
	if (start == 0 || ra <= start ||
	    atomic_load_explicit(&cxx_through_malloc[0], memory_order_relaxed) < CXX_THROUGH_MALLOC_KNOWN)
		return false;
	if (ra == atomic_load_explicit(&next_new_malloc_ra, memory_order_relaxed))
		return true;
	/* The operator is a few dozen bytes: farther return addresses are
	 * another function's without a look at the tables. */
	uint64_t found;
	if (ra - start > 4096 || !unwind_function_start(ra - 1, &found) || found != start)
		return false;
	atomic_store_explicit(&next_new_malloc_ra, ra, memory_order_relaxed);
	return true;
}

/* One learning call: p's inner malloc counted `used` bytes. */
static void new_learned(enum cxx_op op, struct alloc_thread *t, int64_t used, size_t n)
{
	atomic_int *known = &cxx_through_malloc[op - NEW];
	if (used == (int64_t)(n ? n : 1)) {
		int k = atomic_load_explicit(known, memory_order_relaxed);
		if (k >= 0 && k < CXX_THROUGH_MALLOC_KNOWN)
			(void)atomic_compare_exchange_strong(known, &k, k + 1);
		return;
	}
	if (used == 0) /* not counted inside: counted here (it stays short of the sample point) */
		t->countdown -= (int64_t)n;
	atomic_store_explicit(known, -1, memory_order_relaxed);
}

__attribute__((noinline)) static void *new_counted(enum cxx_op op, size_t n, uintptr_t ra)
{
	CXX_FN(new_fn, f, op, new_fallback);
	if (new_is_plain(op) && sampling()) {
		int k = atomic_load_explicit(&cxx_through_malloc[op - NEW], memory_order_relaxed);
		struct alloc_thread *t = k >= 0 ? new_short_of_sample(n) : NULL;
		if (t) {
			int64_t before = t->countdown;
			void *p = f(n);
			if (k < CXX_THROUGH_MALLOC_KNOWN)
				new_learned(op, t, before - t->countdown, n);
			return p;
		}
	}
	bool sampled;
	struct alloc_thread *t = new_begin(n, &sampled);
	return new_end(t, sampled, f(n), n, ra);
}

/* The next operator new of a shape other than (n). */
static void *new_other_forward(enum cxx_op op, size_t n, size_t align, const void *nt)
{
	switch (op) {
	case NEW_NT:
	case NEW_A_NT: {
		CXX_FN(new_nt_fn, f, op, new_nt_fallback);
		return f(n, nt);
	}
	case NEW_AL:
	case NEW_A_AL: {
		CXX_FN(new_al_fn, f, op, new_al_fallback);
		return f(n, align);
	}
	default: {
		CXX_FN(new_al_nt_fn, f, op, new_al_nt_fallback);
		return f(n, align, nt);
	}
	}
}

/* The nothrow and aligned operators: always the marked path. */
__attribute__((noinline)) static void *new_other_counted(enum cxx_op op, size_t n, size_t align,
							 const void *nt, uintptr_t ra)
{
	bool sampled;
	struct alloc_thread *t = new_begin(n, &sampled);
	return new_end(t, sampled, new_other_forward(op, n, align, nt), n, ra);
}

/* Calls the next operator delete `op` (free while there is none). */
static void delete_forward(enum cxx_op op, void *p, size_t z, size_t align, const void *nt)
{
	switch (op) {
	case DEL:
	case DEL_A: {
		CXX_FN(del_fn, f, op, free);
		f(p);
		return;
	}
	case DEL_Z:
	case DEL_A_Z:
	case DEL_AL:
	case DEL_A_AL: {
		CXX_FN(del_z_fn, f, op, NULL);
		if (f)
			f(p, op == DEL_AL || op == DEL_A_AL ? align : z);
		else
			free(p);
		return;
	}
	case DEL_NT:
	case DEL_A_NT: {
		CXX_FN(del_nt_fn, f, op, NULL);
		if (f)
			f(p, nt);
		else
			free(p);
		return;
	}
	case DEL_Z_AL:
	case DEL_A_Z_AL: {
		CXX_FN(del_zz_fn, f, op, NULL);
		if (f)
			f(p, z, align);
		else
			free(p);
		return;
	}
	case DEL_AL_NT:
	case DEL_A_AL_NT: {
		CXX_FN(del_z_nt_fn, f, op, NULL);
		if (f)
			f(p, align, nt);
		else
			free(p);
		return;
	}
	default:
		free(p);
		return;
	}
}

/* An operator delete whose pointer may be a live sampled block, or whose
 * next operator is not known yet: p leaves the live table before the memory
 * goes back. */
static void delete_slow(enum cxx_op op, void *p, size_t z, size_t align, const void *nt)
{
	if (alloc_live_maybe(p))
		(void)alloc_live_retire(p, NULL);
	delete_forward(op, p, z, align, nt);
}

/* Whether the next operator delete gives its pointer to our free, which
 * then does the checks (the bootstrap arena, the live filter), learned on
 * its first calls as for operator new: once CXX_THROUGH_FREE_KNOWN calls
 * were seen reaching our free with their pointer, the operator forwards
 * with no check of its own (free's are the same, made once); a call seen
 * otherwise (a runtime that frees by other means: jemalloc's) makes it -1,
 * and every call checks as before. */
#define CXX_THROUGH_FREE_KNOWN 64
static atomic_int cxx_through_free[CXX_OPS - DEL];

/* The fast path of an operator delete: true to forward with no check. */
static inline bool delete_unchecked(enum cxx_op op)
{
	return RT_LIKELY(atomic_load_explicit(&alloc_hot.free_checks, memory_order_relaxed) == 0) ||
	       atomic_load_explicit(&cxx_through_free[op - DEL], memory_order_relaxed) >=
		       CXX_THROUGH_FREE_KNOWN;
}

/* An operator delete with checks to make, learning on its first calls. */
__attribute__((noinline)) static void delete_checked(enum cxx_op op, void *p, size_t z,
						     size_t align, const void *nt)
{
	enum free_action a = free_action(p);
	if (a == FREE_IGNORE)
		return;
	if (a == FREE_RETIRE || cxx_known(op) == NULL) {
		delete_slow(op, p, z, align, nt);
		return;
	}
	atomic_int *known = &cxx_through_free[op - DEL];
	int k = atomic_load_explicit(known, memory_order_relaxed);
	struct alloc_thread *t =
		k >= 0 && k < CXX_THROUGH_FREE_KNOWN && p != NULL ? alloc_thread_mine() : NULL;
	if (t == NULL) {
		delete_forward(op, p, z, align, nt);
		return;
	}
	t->free_noted = ~(uint32_t)(uintptr_t)p; /* anything but p */
	(void)atomic_fetch_add(&alloc_hot.free_checks, ALLOC_FREE_LEARNING);
	delete_forward(op, p, z, align, nt);
	(void)atomic_fetch_sub(&alloc_hot.free_checks, ALLOC_FREE_LEARNING);
	if (t->free_noted == (uint32_t)(uintptr_t)p)
		(void)atomic_compare_exchange_strong(known, &k, k + 1);
	else
		atomic_store_explicit(known, -1, memory_order_relaxed);
}

/* Mangled names: the Itanium C++ ABI spelling of each operator. */
SW_EXPORT void *_Znwm(size_t n);
SW_EXPORT void *_Znam(size_t n);
SW_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt);
SW_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt);
SW_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al);
SW_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t al);
SW_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt);
SW_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt);
SW_EXPORT void _ZdlPv(void *p);
SW_EXPORT void _ZdaPv(void *p);
SW_EXPORT void _ZdlPvm(void *p, size_t z);
SW_EXPORT void _ZdaPvm(void *p, size_t z);
SW_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt);
SW_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt);
SW_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t al);
SW_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t al);
SW_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t z, size_t al);
SW_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t z, size_t al);
SW_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt);
SW_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt);

/* The bodies: forward at once while sampling is off and the next operator
 * is known, else take the operator's counted or slow path. */
#define NEW_BODY(type, op, n, al, nt, ...)                                     \
	void *sym_ = cxx_known(op);                                            \
	if (RT_LIKELY(sym_ != NULL) && !sampling()) {                          \
		type f_;                                                       \
		HOOK_FN(f_, sym_);                                             \
		return f_(__VA_ARGS__);                                        \
	}                                                                      \
	return new_other_counted(op, n, al, nt, CALLER_RA())
#define DEL_BODY(type, op, z, al, nt, ...)                                     \
	void *sym_ = cxx_known(op);                                            \
	if (RT_UNLIKELY(sym_ == NULL || !delete_unchecked(op))) {              \
		delete_checked(op, p, z, al, nt);                              \
		return;                                                        \
	}                                                                      \
	type f_;                                                               \
	HOOK_FN(f_, sym_);                                                     \
	f_(__VA_ARGS__)

/* A plain operator new also forwards at once while its bytes stay short of
 * the sample point, once its inner malloc is known to count them. */
#define NEW_PLAIN_BODY(op, n)                                                  \
	void *sym_ = cxx_known(op);                                            \
	if (RT_LIKELY(sym_ != NULL) && (!sampling() || new_unmarked(op, n))) { \
		new_fn f_;                                                     \
		HOOK_FN(f_, sym_);                                             \
		return f_(n);                                                  \
	}                                                                      \
	return new_counted(op, n, CALLER_RA())

SW_EXPORT void *_Znwm(size_t n) { NEW_PLAIN_BODY(NEW, n); }
SW_EXPORT void *_Znam(size_t n) { NEW_PLAIN_BODY(NEW_A, n); }
SW_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
	NEW_BODY(new_nt_fn, NEW_NT, n, 0, nt, n, nt);
}
SW_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt)
{
	NEW_BODY(new_nt_fn, NEW_A_NT, n, 0, nt, n, nt);
}
SW_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t al)
{
	NEW_BODY(new_al_fn, NEW_AL, n, al, NULL, n, al);
}
SW_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t al)
{
	NEW_BODY(new_al_fn, NEW_A_AL, n, al, NULL, n, al);
}
SW_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
	NEW_BODY(new_al_nt_fn, NEW_AL_NT, n, al, nt, n, al, nt);
}
SW_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
	NEW_BODY(new_al_nt_fn, NEW_A_AL_NT, n, al, nt, n, al, nt);
}
SW_EXPORT void _ZdlPv(void *p) { DEL_BODY(del_fn, DEL, 0, 0, NULL, p); }
SW_EXPORT void _ZdaPv(void *p) { DEL_BODY(del_fn, DEL_A, 0, 0, NULL, p); }
SW_EXPORT void _ZdlPvm(void *p, size_t z) { DEL_BODY(del_z_fn, DEL_Z, z, 0, NULL, p, z); }
SW_EXPORT void _ZdaPvm(void *p, size_t z) { DEL_BODY(del_z_fn, DEL_A_Z, z, 0, NULL, p, z); }
SW_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt)
{
	DEL_BODY(del_nt_fn, DEL_NT, 0, 0, nt, p, nt);
}
SW_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt)
{
	DEL_BODY(del_nt_fn, DEL_A_NT, 0, 0, nt, p, nt);
}
SW_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t al)
{
	DEL_BODY(del_z_fn, DEL_AL, 0, al, NULL, p, al);
}
SW_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t al)
{
	DEL_BODY(del_z_fn, DEL_A_AL, 0, al, NULL, p, al);
}
SW_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t z, size_t al)
{
	DEL_BODY(del_zz_fn, DEL_Z_AL, z, al, NULL, p, z, al);
}
SW_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t z, size_t al)
{
	DEL_BODY(del_zz_fn, DEL_A_Z_AL, z, al, NULL, p, z, al);
}
SW_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt)
{
	DEL_BODY(del_z_nt_fn, DEL_AL_NT, 0, al, nt, p, al, nt);
}
SW_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt)
{
	DEL_BODY(del_z_nt_fn, DEL_A_AL_NT, 0, al, nt, p, al, nt);
}

/* Our own definitions' addresses, whatever the exported names bind to. */
void *alloc_hooks_own_malloc(size_t n) __attribute__((alias("malloc"), visibility("hidden")));
void *alloc_hooks_own_new(size_t n) __attribute__((alias("_Znwm"), visibility("hidden")));

/* Tells the collector when the program's lookup of a name we interpose
 * finds another definition (the executable's own allocator). */
static void note_binding(const char *name, void *(*ours)(size_t))
{
	void *bound = host_dlsym(HOST_RTLD_DEFAULT, name), *own;
	__builtin_memcpy(&own, &ours, sizeof(own));
	if (bound != NULL && bound != own)
		alloc_note_foreign_binding(name, bound);
}

/* Resolve before the program's own constructors start threads. */
__attribute__((constructor(101))) static void alloc_hooks_resolve_early(void)
{
	(void)resolve();
	note_binding("malloc", alloc_hooks_own_malloc);
	note_binding("_Znwm", alloc_hooks_own_new);
}
