#!/usr/bin/env python3
"""Times a whole process: `python3 bench/measure.py RUNS CMD...` runs CMD once to warm up,
then RUNS times with stdout to /dev/null (RUNS 0: one run, no warm-up, for what is only
cold once), and prints `MEDIAN_SECONDS MAX_RSS_KIB`
(wall time from perf_counter around the process, peak RSS from wait4). With
MEASURE_CPU=1 a third column is the median CPU time (user + sys, from wait4). Exit status 1
of CMD (nothing found) counts as success; any other failure is printed and exits 2.

`python3 bench/measure.py --interleave RUNS CMD1... ::: CMD2... [::: ...]` runs the
commands in turn (one run of each per round, a warm-up round first, RUNS rounds), so that
all see the same machine, and prints one `MEDIAN_SECONDS MAX_RSS_KIB MEDIAN_CPU_SECONDS`
line per command, in order.

MEASURE_BEFORE=SHELL_COMMAND runs that command (`sh -c`, untimed) before every run of a
measured command, warm-up included: e.g. an entry appended to a session before each push."""
import os
import statistics
import subprocess
import sys
import time


def measure(cmd, runs):
    """(median wall seconds, max peak RSS in KiB, last stderr) of `cmd` run `runs` times
    after a warm-up run (`runs` 0: once, no warm-up); `None` times when it failed (exit
    status other than 0 and 1)."""
    return measure_cpu(cmd, runs)[:3]


def measure_cpu(cmd, runs):
    """[`measure`] and, last, the median CPU seconds (user + sys) of `cmd`
    run `runs` times after a warm-up run (`runs` 0: once, no warm-up); `None` times when it
    failed (exit status other than 0 and 1)."""
    walls, rss, cpu, err = [], [], [], ""
    before = os.environ.get("MEASURE_BEFORE")
    for k in range(runs + 1 if runs > 0 else 1):
        if before:
            subprocess.run(["sh", "-c", before], check=True)
        with open(os.devnull, "w") as sink:
            t0 = time.perf_counter()
            p = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.PIPE)
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t0
            err = p.stderr.read().decode(errors="replace")
            p.stderr.close()
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            return None, None, err, None
        if k > 0 or runs == 0:
            walls.append(wall)
            rss.append(ru.ru_maxrss)
            cpu.append(ru.ru_utime + ru.ru_stime)
    return statistics.median(walls), max(rss), err, statistics.median(cpu)


def interleaved(cmds, runs):
    """[(median wall s, max RSS KiB, median CPU s)] of `cmds` run one after the other,
    `runs` rounds after a warm-up round; `None` (and the failing command's stderr) when one
    failed."""
    walls = [[] for _ in cmds]
    rss = [0 for _ in cmds]
    cpu = [[] for _ in cmds]
    for k in range(runs + 1):
        for i, cmd in enumerate(cmds):
            wall, peak, err, c = measure_cpu(cmd, 0)
            if wall is None:
                return None, err
            if k > 0:
                walls[i].append(wall)
                rss[i] = max(rss[i], peak)
                cpu[i].append(c)
    return [
        (statistics.median(w), m, statistics.median(c)) for w, m, c in zip(walls, rss, cpu)
    ], ""


def main():
    if sys.argv[1] == "--interleave":
        cmds, cur = [], []
        for a in sys.argv[3:]:
            if a == ":::":
                cmds.append(cur)
                cur = []
            else:
                cur.append(a)
        cmds.append(cur)
        res, err = interleaved(cmds, int(sys.argv[2]))
        if res is None:
            sys.stderr.write(err)
            sys.exit(2)
        for wall, rss, cpu in res:
            print(f"{wall:.4f} {rss} {cpu:.4f}")
        return
    wall, rss, err, cpu = measure_cpu(sys.argv[2:], int(sys.argv[1]))
    if wall is None:
        sys.stderr.write(err)
        sys.exit(2)
    if os.environ.get("MEASURE_CPU") == "1":
        print(f"{wall:.4f} {rss} {cpu:.4f}")
    else:
        print(f"{wall:.4f} {rss}")


if __name__ == "__main__":
    main()
