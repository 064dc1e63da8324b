"""What the kernel counts for our threads (named stowaway-*) in a process."""
import os


def our_wakes(pid):
    """Voluntary context switches of our threads in process pid, by name:
    each is one sleep of ours ending, a count that load does not raise."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            if not name.startswith("stowaway-"):
                continue
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        out[f"{name}/{tid}"] = int(line.split()[1])
        except OSError:
            pass
    return out
