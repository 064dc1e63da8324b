/* The module registry: a snapshot of the process's executable mappings with
 * their ELF facts (path, build id, load bias), sorted function symbols from
 * .symtab/.dynsym, and compact unwind tables from .eh_frame, which it
 * publishes to the unwinder (unwind.h).
 *
 * Everything here runs OFF the signal path (it reads /proc/self/maps, maps
 * ELF files, allocates, and takes the registry mutex).
 */
#ifndef STOWAWAY_SYMBOLS_SYMBOLS_H
#define STOWAWAY_SYMBOLS_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/frame.h"

/* Where separate debug files are searched besides /usr/lib/debug
 * (':'-separated roots, copied) and how many bytes one module's DWARF index
 * may hold (0: DWARF is not read).  Call before the first refresh. */
void symbols_configure(const char *debug_dirs, size_t dwarf_budget);

/* Rereads /proc/self/maps; loads modules that appeared, retires the ones that
 * disappeared, and publishes a new unwind snapshot.  Cheap when the maps did
 * not change.  Call at start, after dlopen/dlclose (see
 * unwind_code_reads_pause for dlclose), and periodically (every few seconds)
 * for threads' new stacks and code mapped by other means.  Any thread; the
 * calls are serialized internally.  False if /proc/self/maps could not be
 * read or memory ran out (the previous state stays). */
bool symbols_refresh(void);

/* Resolves pc (as written by unwind_stack: return addresses already -1).
 * Fills `out` with the executable mapping containing pc (map_path "" and
 * zero range if none) and the function whose [start, start+size) contains
 * it, else function = NULL: a pc past the end of the nearest symbol is not
 * that symbol.  When the module has DWARF (in the file or a separate debug
 * file, see debuginfo.h), also the source file and line and the frames
 * inlined at pc; the module's index is built on first use, on the calling
 * thread.  `ctx` is unused (callback signature of the encoder).
 * The strings stay valid until symbols_collect_garbage().  Returns false
 * only if pc is in no known executable mapping. */
bool symbols_resolve(void *ctx, uint64_t pc, struct sw_frame_info *out);

/* Frees modules unloaded by earlier refreshes once no unwinder can use their
 * tables.  Call from the thread that consumes symbols_resolve() results, at
 * a point where it holds none of those strings (e.g. after encoding). */
void symbols_collect_garbage(void);

/* Bounds [lo, hi) of the readable-writable anonymous mapping containing sp,
 * read fresh from /proc/self/maps.  For the thread registration path: a new
 * thread calls it with the address of a local and hands the bounds to the
 * unwinder in unwind_regs.stack_lo/stack_hi, so its samples need not wait
 * for the next refresh (until then its stack reads go through the kernel). */
bool symbols_stack_bounds_of(uint64_t sp, uint64_t *lo, uint64_t *hi);

/* In a fork child: the registry lock may have been held by a thread that no
 * longer exists. */
void symbols_after_fork_child(void);

/* Number of modules and function symbols currently loaded (logs, tests). */
void symbols_stats(uint32_t *modules, uint64_t *functions, uint64_t *cfi_rows);

#endif
