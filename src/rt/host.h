/* The only functions and data we take from the host process.
 *
 * Each is a weak undefined reference: if the host does not provide it the
 * address is NULL and the caller must cope.  tests/integration/symbols.sh
 * checks that the library's undefined dynamic symbols are exactly this
 * list (tests/allowed-undefined.txt).  Never call one of these from a signal
 * handler, and never one whose structure layouts differ between glibc and
 * musl.  Add to this list only after review.
 */
#ifndef STOWAWAY_RT_HOST_H
#define STOWAWAY_RT_HOST_H

#include <stddef.h>
#include <stdint.h>

struct dl_phdr_info;

/* The initial environment (glibc and musl both export `environ`). */
extern char **environ __attribute__((weak));
/* Symbol lookup: RTLD_NEXT for interposition, RTLD_DEFAULT otherwise. */
extern void *dlsym(void *handle, const char *name) __attribute__((weak));
extern char *dlerror(void) __attribute__((weak));
#define HOST_RTLD_NEXT ((void *)-1l)
#define HOST_RTLD_DEFAULT ((void *)0)

/* dlsym, NULL without one.  A failed lookup leaves an error that the
 * program's next dlerror() would report as its own ("Symbol not found:
 * pvalloc" on musl), so it is taken back at once. */
static inline void *host_dlsym(void *handle, const char *name)
{
	if (!dlsym)
		return (void *)0;
	void *sym = dlsym(handle, name);
	if (!sym && dlerror)
		(void)dlerror();
	return sym;
}
/* Loaded objects, for unwind tables and symbols (never in a signal handler). */
extern int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *info, size_t size, void *data),
			   void *data) __attribute__((weak));
/* The fields of struct dl_phdr_info that glibc and musl share, in this
 * order, since their first versions with TLS data (the callback's `size`
 * says how many the host fills). */
struct host_dl_phdr_info {
	uint64_t dlpi_addr;     /* load bias */
	const char *dlpi_name;
	const void *dlpi_phdr;  /* Elf64_Phdr[dlpi_phnum], in memory */
	uint16_t dlpi_phnum;
	unsigned long long dlpi_adds;
	unsigned long long dlpi_subs;
	size_t dlpi_tls_modid;
	void *dlpi_tls_data;
};
/* Our own threads: the next pthread_create is found with dlsym(RTLD_NEXT)
 * (we interpose pthread_create); always with a NULL attribute, whose layout
 * differs between glibc and musl.  pthread_t is pointer-sized in both. */
extern int pthread_detach(unsigned long thread) __attribute__((weak));
/* AT_SECURE and AT_SYSINFO_EHDR. */
extern unsigned long getauxval(unsigned long type) __attribute__((weak));
/* The kernel's page size (AT_PAGESZ: 4 KiB, or 16 or 64 KiB on arm64);
 * 4 KiB if the host cannot say. */
static inline uint64_t host_page_size(void)
{
	uint64_t page = getauxval ? getauxval(6 /* AT_PAGESZ */) : 0;
	return page != 0 && (page & (page - 1)) == 0 ? page : 4096;
}
/* The main program's entry point (AT_ENTRY), an address in its code; 0 if
 * the host cannot say. */
static inline uint64_t host_entry_pc(void)
{
	return getauxval ? getauxval(9 /* AT_ENTRY */) : 0;
}
/* Fork handlers: glibc exports __register_atfork (pthread_atfork lives in
 * libc_nonshared.a there); musl exports pthread_atfork. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso_handle) __attribute__((weak));
extern int pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
	__attribute__((weak));

#endif
