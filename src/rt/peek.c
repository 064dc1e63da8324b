/* Fault-free reads of our own address space through the kernel. */
#include "rt/rt.h"
#include "rt/sys.h"

#include <linux/uio.h>

long rt_peek_ranges(void *const *dst, const uintptr_t *src, const size_t *len, uint32_t n)
{
	struct iovec local[RT_PEEK_MAX_RANGES], remote[RT_PEEK_MAX_RANGES];
	if (n == 0 || n > RT_PEEK_MAX_RANGES)
		return -EINVAL;
	long total = 0;
	for (uint32_t i = 0; i < n; i++) {
		local[i] = (struct iovec){ dst[i], len[i] };
		remote[i] = (struct iovec){ (void *)src[i], len[i] };
		total += (long)len[i];
	}
	long r = sys_call6(__NR_process_vm_readv, sys_getpid(), (long)local, n, (long)remote, n, 0);
	if (r < 0)
		return r;
	return r == total ? r : -EFAULT;
}

bool rt_peek(void *dst, uintptr_t src, size_t n)
{
	void *d[1] = { dst };
	uintptr_t s[1] = { src };
	size_t l[1] = { n };
	return rt_peek_ranges(d, s, l, 1) == (long)n;
}
