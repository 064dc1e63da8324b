#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/libmaps_late.so build/workloads/maps_late
"""Code mapped after start without dlopen is named before the periodic
(3 s) maps refresh: build/workloads/maps_late maps a shared object's
segments itself and burns CPU in late_hot_loop for 1.5 s.  The unwinder
notes the unknown code, the sampler refreshes the registry within 100 ms,
and the exit flush refreshes before resolving: the profile (go tool pprof
-symbolize=none: only what we wrote) names the function for nearly all of
the time, "<unknown>" for almost none."""
import glob
import os
import re
import subprocess
import sys
import tempfile

from checks import check, check_terse, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")


def main():
    lib = os.path.join(WL, "libmaps_late.so")
    nm = subprocess.run(["nm", lib], capture_output=True, text=True).stdout
    m = re.search(r"^([0-9a-f]+) T late_hot_loop$", nm, re.M)
    if not check_terse("late_hot_loop found in libmaps_late.so", m is not None, nm[-300:]):
        return
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, LD_PRELOAD=SO,
                   DD_SERVICE="late", STOWAWAY_CPU_HZ="1000", STOWAWAY_MAX_OVERHEAD_PCT="100")
        proc = subprocess.run([os.path.join(WL, "maps_late"), lib, m.group(1), "1.5"], env=env,
                              capture_output=True, text=True, timeout=60)
        check("maps_late runs", proc.returncode == 0, proc.stderr[-300:])
        files = glob.glob(os.path.join(out, "late.*.cpu.*.pb.gz"))
        if not check("a CPU profile was written", len(files) == 1, str(files)):
            return
        top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-top", "-nodecount=1000",
                              "-sample_index=cpu-time", files[0]], capture_output=True, text=True).stdout
        flat = {}
        for line in top.splitlines():
            r = re.match(r"\s*\S+\s+([\d.]+)%\s+\S+%\s+\S+\s+\S+%\s+(.*)$", line)
            if r:
                flat[r.group(2).strip()] = float(r.group(1))
        check("late_hot_loop named for >= 90% of CPU time", flat.get("late_hot_loop", 0.0) >= 90.0,
              f"{flat.get('late_hot_loop', 0.0):.1f}%")
        check("<unknown> for <= 5% of CPU time", flat.get("<unknown>", 0.0) <= 5.0,
              f"{flat.get('<unknown>', 0.0):.1f}%")


main()
sys.exit(status())
