#!/usr/bin/env python3
# needs: build/libstowaway.so
"""A program that dlopens many libraries one after another (a plugin host,
a Python app importing its extension modules) and runs code in each right
after loading it.  Each dlopen adds the new objects to the registry from
the loader's list (symbols_add_loaded) instead of reading /proc/self/maps,
whose cost grows with every mapping: 300 such dlopens cost 300 ms of CPU
when every one read it, against 12 ms for the program itself.  Judged by
strace (the opens of /proc/self/maps: a few per process, not one per
dlopen) and by `go tool pprof -raw` on the CPU profile: the samples taken
in the libraries' code are named after their functions and unwind through
the libraries' own unwind tables (built without frame pointers) to main.
glibc only (musl's dlopen is the same path, covered by hazards_dlopen)."""
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from checks import check, status
from pprof_raw import samples

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
LIBS = 120

LIBRARY = """__attribute__((noinline)) static double inner_{i}(long n)
{{
	volatile double x = 0;
	for (long k = 0; k < n; k++)
		x += (double)k * {i}.5;
	return x;
}}
double spin_{i}(long n) {{ return inner_{i}(n) + 1.0; }}
"""

MAIN = r"""#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(int argc, char **argv)
{
	int n = atoi(argv[2]);
	double ms_each = atof(argv[3]), sum = 0;
	char path[512], name[64];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/libspin%d.so", argv[1], i);
		void *h = dlopen(path, RTLD_NOW);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		snprintf(name, sizeof name, "spin_%d", i);
		double (*spin)(long) = (double (*)(long))dlsym(h, name);
		double until = cpu_ms() + ms_each;
		while (cpu_ms() < until)
			sum += spin(200000);
	}
	printf("%d %d\n", n, sum > 0 ? 1 : 0);
	return 0;
}
"""


def build(tmp):
    def one(i):
        src = os.path.join(tmp, f"spin{i}.c")
        with open(src, "w") as f:
            f.write(LIBRARY.format(i=i))
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-fomit-frame-pointer", "-o",
                        os.path.join(tmp, f"libspin{i}.so"), src], check=True, timeout=60)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(one, range(LIBS)))
    with open(os.path.join(tmp, "main.c"), "w") as f:
        f.write(MAIN)
    subprocess.run(["gcc", "-O1", "-o", os.path.join(tmp, "main"), os.path.join(tmp, "main.c"), "-ldl"],
                   check=True, timeout=60)


def main():
    missing = [t for t in ("gcc", "strace", "go") if shutil.which(t) is None]
    if missing or not os.path.exists(LIB):
        check("dlopen_many prerequisites", False, f"needs {LIB}, gcc, strace and go; missing {missing}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        build(tmp)
        out = os.path.join(tmp, "profiles")
        trace = os.path.join(tmp, "strace.txt")
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_PROFILES="cpu", STOWAWAY_OUTPUT_DIR=out)
        r = subprocess.run(["strace", "-f", "-e", "trace=openat,open", "-o", trace, "env", f"LD_PRELOAD={LIB}",
                            os.path.join(tmp, "main"), tmp, str(LIBS), "5"],
                           env=env, capture_output=True, text=True, timeout=120)
        check("dlopen_many: the program runs unchanged under the library",
              r.returncode == 0 and r.stdout.strip() == f"{LIBS} 1", f"rc {r.returncode}, {r.stdout!r} {r.stderr[-300:]!r}")
        maps_reads = sum(1 for line in open(trace) if "/proc/self/maps" in line)
        check(f"dlopen_many: /proc/self/maps read a few times, not once per dlopen ({LIBS} dlopens)",
              maps_reads <= 10, f"{maps_reads} opens of /proc/self/maps")
        files = [os.path.join(out, f) for f in os.listdir(out) if ".cpu." in f] if os.path.isdir(out) else []
        rows = samples(files[0]) if len(files) == 1 else []
        total = sum(v[0] for v, _, _ in rows)
        in_libs = [(v[0], fns) for v, fns, _ in rows if fns and fns[0].startswith(("inner_", "spin_"))]
        lib_samples = sum(n for n, _ in in_libs)
        whole = sum(n for n, fns in in_libs if "main" in fns and any(f.startswith("spin_") for f in fns))
        named = {fns[0].split("_", 1)[1] for _, fns in in_libs}
        check("dlopen_many: most CPU samples are in the loaded libraries, named after their functions",
              total > 0 and lib_samples >= 0.5 * total and len(named) >= LIBS // 4,
              f"{lib_samples} of {total} samples in inner_*/spin_*, {len(named)} libraries named")
        check("dlopen_many: those samples unwind through the libraries' tables to main",
              lib_samples > 0 and whole == lib_samples, f"{whole} of {lib_samples} reach main through spin_*")


if __name__ == "__main__":
    main()
    sys.exit(status())
