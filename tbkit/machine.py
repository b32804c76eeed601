"""tbkit.machine — facts about the machine and the checkout a results
directory records (CPU, memory, kernel, governor, git), the core a
single-threaded measurement is pinned to, and Valgrind (its version, the
fixed cache model every count is simulated on, callgrind's output).  Used by
the bench, replay and counts runners; standard library only.
"""

import os
import platform
import subprocess

# The checkout this package is part of.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def cpu_model():
    for line in (read("/proc/cpuinfo", "") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def os_release():
    for line in (read("/etc/os-release", "") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return None


def mem_total_kb():
    for line in (read("/proc/meminfo", "") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    return None


def git(*args):
    try:
        return subprocess.check_output(["git", "-C", ROOT] + list(args),
                                       stderr=subprocess.DEVNULL,
                                       universal_newlines=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def pin_cpu():
    """The core single-threaded measurements run on: the last one this
    process may use (the first tends to take the machine's interrupts);
    None where affinity is unknown."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1] if cpus else None


def pin_self():
    """Pins this process (and what it starts) to pin_cpu(): unpinned, two
    replays of one trace differed by 25 % on every backend, as the
    scheduler placed them."""
    cpu = pin_cpu()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def machine_facts():
    governor = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    clock = read("/sys/devices/system/clocksource/clocksource0/"
                 "current_clocksource")
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity") else None,
        "memory_kb": mem_total_kb(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "os": os_release(),
        "arch": platform.machine(),
        "governor": governor,
        "clocksource": clock,
        "transparent_hugepage": read(
            "/sys/kernel/mm/transparent_hugepage/enabled"),
        "transparent_hugepage_defrag": read(
            "/sys/kernel/mm/transparent_hugepage/defrag"),
        "load_average_at_start": os.getloadavg(),
        "hostname": platform.node(),
        "python": platform.python_version(),
    }


# One fixed cache model, so that the counts are the same on every machine
# (Valgrind would otherwise copy the host's caches, 512 MiB of "L3" on some
# virtual machines, where nothing misses): 32 KiB 8-way L1s, an 8 MiB
# 16-way last level, 64-byte lines.
COUNTS_CACHES = {"I1": (32768, 8, 64), "D1": (32768, 8, 64),
                 "LL": (8388608, 16, 64)}


def parse_callgrind(path):
    """{event: total} and the cache descriptions of one callgrind output."""
    events, totals, desc = None, None, []
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("desc:"):
                desc.append(line[5:].strip())
            elif line.startswith(("summary:", "totals:")) and events:
                totals = [int(x) for x in line.split()[1:]]
    if not events or totals is None:
        raise ValueError("%s: no events or totals line" % path)
    totals += [0] * (len(events) - len(totals))
    return dict(zip(events, totals)), desc


def callgrind_by_file(path, event="Ir"):
    """{source file: self cost of `event`} of one callgrind output, each
    instruction charged to the file its code came from: an inlined
    function's to its own file (callgrind's fi=/fe= records, which need
    the binary's debug information; without it every file is "???").
    The cost lines after a calls= line are the callee's inclusive cost
    and are skipped, so the files' costs add up to the totals."""
    # compressed names: "(id) name" once, then "(id)"; files, functions
    # and objects are numbered apart
    names = {"file": {}, "fn": {}, "ob": {}}
    space = {"fl": "file", "fi": "file", "fe": "file", "cfi": "file", "cfl": "file",
             "fn": "fn", "cfn": "fn", "ob": "ob", "cob": "ob"}
    cur, events, skip = "???", None, False
    out = {}

    def name_of(key, v):
        v, table = v.strip(), names[space[key]]
        if v.startswith("("):
            k, _, rest = v.partition(")")
            if rest.strip():
                table[k] = rest.strip()
            return table.get(k, "???")
        return v
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                key, eq, val = line.partition("=")
                if eq and key in ("fl", "fi", "fe"):
                    cur = name_of(key, val)
                elif eq and key in space:
                    name_of(key, val)
                elif eq and key == "calls":
                    skip = True
                continue
            if skip:
                skip = False
                continue
            if events is None:
                continue
            parts = line.split()
            col = 1 + events.index(event) if event in events else None
            if col is None or col >= len(parts):
                continue
            out[cur] = out.get(cur, 0) + int(parts[col])
    return out


def valgrind_version():
    try:
        return subprocess.check_output(["valgrind", "--version"],
                                       universal_newlines=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return None
