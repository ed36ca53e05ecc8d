#!/usr/bin/env python3
"""Touches MB megabytes of fresh memory, then gives it back:  python3 bench/prefault.py MB

On this project's VM the host takes back memory the guest has not used for a while (the
guest reclaims cold pages and reports free ones), so the guest's next use of such a page
stops for the host to supply it again. Writing 464 MB of new files puts them into fresh
page-cache pages, and when those pages are not there the same import takes 2-2.5x as long
(1.7-1.9 s instead of 0.7-0.8, nearly all of it in the kernel's copy into the page cache).
A machine of its own has its memory; touching memory first measures what the import costs
on one. Never more than the memory free now less 512 MB, so nothing cached is evicted.
"""
import mmap
import sys


def free_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemFree:"):
                return int(line.split()[1]) // 1024
    return 0


mb = min(int(sys.argv[1]), free_mb() - 512)
if mb > 0:
    n = mb << 20
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for i in range(0, n, 4096):
        m[i] = 1
    m.close()
