#!/usr/bin/env python3
"""Side-by-side benchmark: sessiontree and the reference (Pi 1.6.0, and 0.73.1 for the
record) on the same generated files, as whole processes and in-process. Prints a Markdown
table with times, peak RSS and ratios.

    python3 bench/side_by_side.py [--runs 3] [--big] [--work DIR]

Needs: cargo, node, interop/node_modules (cd interop && npm ci), /usr/bin/time.
--big adds a 2 GB session (sessiontree only: the reference cannot open it).
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

import measure as timing  # bench/measure.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REL = os.path.join(ROOT, "target", "release")


def sh(cmd, stdout=subprocess.DEVNULL, **kw):
    return subprocess.run(cmd, check=True, stdout=stdout, stderr=subprocess.PIPE, text=True, **kw)


def measure(cmd, runs):
    """Median wall seconds and max peak RSS (MB) of a whole process, after one warm-up run
    (bench/measure.py); on failure (None, None, the last lines of stderr)."""
    wall, rss, err = timing.measure(cmd, runs)
    if wall is None:
        return None, None, err.strip().splitlines()[-2:] if err else "failed"
    return wall, rss / 1024, err


def measure_interleaved(cmds, runs):
    """`measure` for several commands, one run of each in turn, so that all see the same
    machine (page cache, reclaim, neighbours). Returns [(median s, max RSS MB)]."""
    res = [([], []) for _ in cmds]
    for k in range(runs + 1):
        for i, cmd in enumerate(cmds):
            t, m, _ = measure(cmd, 1)
            if t is None:
                return [(None, None) for _ in cmds]
            if k > 0:
                res[i][0].append(t)
                res[i][1].append(m)
    return [(statistics.median(w), max(r)) for w, r in res]


def json_line(text):
    for l in reversed(text.splitlines()):
        l = l.strip()
        if l.startswith("{"):
            return json.loads(l)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="sessiontree-bench-")
    os.makedirs(work, exist_ok=True)
    print(f"building (release) … work dir {work}", file=sys.stderr)
    sh(["cargo", "build", "--release", "-q", "-p", "sessiontree-cli"], cwd=ROOT)
    sh(["cargo", "build", "--release", "-q", "-p", "sessiontree", "--example", "gen_session", "--example", "append_bench", "--example", "context_bench"], cwd=ROOT)
    st = os.path.join(REL, "sessiontree")
    ex = lambda n: os.path.join(REL, "examples", n)
    sizes = [("200 entries", 200, 5000), ("5,000 entries", 5000, 5000), ("50,000 entries", 50000, 5000)]
    if args.big:
        sizes.append(("2 GB", 400000, 5000))
    files = []
    for label, n, avg in sizes:
        f = os.path.join(work, f"s{n}.jsonl")
        if not os.path.exists(f):
            with open(f, "w") as out:
                subprocess.run([ex("gen_session"), str(n), str(avg), "1"], stdout=out, check=True)
        files.append((label, n, f, os.path.getsize(f)))

    rows = []
    for label, n, f, size in files:
        subprocess.run(["cat", f], stdout=subprocess.DEVNULL)  # warm the page cache
        os.sync()
        (cat_t, _), (ours_t, ours_m) = measure_interleaved(
            [["cat", f], [st, "context", f, "--json"]], args.runs
        )
        inproc = json_line(sh([ex("context_bench"), f], stdout=subprocess.PIPE).stdout)
        ref = {}
        for w in ["pi16", "pi073"]:
            if size > 500 * 1024 * 1024:
                ref[w] = (None, None, None)
                continue
            t, m, err = measure(["node", os.path.join(ROOT, "bench", "ref-context.mjs"), w, f], args.runs)
            ms = None
            if err and "in-process" in (err if isinstance(err, str) else ""):
                ms = float(err.split("open+context:")[1].split("ms")[0])
            ref[w] = (t, m, ms)
        rows.append((label, size, cat_t, ours_t, ours_m, inproc, ref))

    def fmt(x, unit="s", nd=3):
        return "n/a" if x is None else f"{x:.{nd}f} {unit}"

    print(f"\n### Open + context ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, median of {args.runs})\n")
    print("| session | size | `cat` | sessiontree (whole process) | peak RSS | Pi 1.6.0 (whole) | peak RSS | ratio vs 1.6.0 | × cat | Pi 0.73.1 (whole) | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, size, cat_t, ours_t, ours_m, inproc, ref in rows:
        r16 = ref["pi16"]
        ratio = f"{r16[0] / ours_t:.1f}x" if r16[0] and ours_t else "n/a"
        xcat = f"{ours_t / cat_t:.1f}" if ours_t and cat_t else "n/a"
        print(f"| {label} | {size / 1e6:.0f} MB | {fmt(cat_t)} | {fmt(ours_t)} | {fmt(ours_m, 'MB', 0)} | {fmt(r16[0])} | {fmt(r16[1], 'MB', 0)} | {ratio} | {xcat} | {fmt(ref['pi073'][0])} | {fmt(ref['pi073'][1], 'MB', 0)} |")
    print("\n### In-process\n")
    print("| session | sessiontree load | path walk | context | context JSON | Pi 1.6.0 open+context | Pi 0.73.1 |")
    print("|---|---|---|---|---|---|---|")
    for label, size, cat_t, ours_t, ours_m, inproc, ref in rows:
        print(f"| {label} | {inproc['load_ms']:.0f} ms | {inproc['walk_ms']:.2f} ms ({inproc['path_entries']} entries) | {inproc['context_ms']:.1f} ms | {inproc['write_ms']:.0f} ms | {fmt(ref['pi16'][2], 'ms', 0)} | {fmt(ref['pi073'][2], 'ms', 0)} |")

    # Appending: to a new session and to the open 50,000-entry one.
    big = [f for f in files if f[1] == 50000][0][2]
    n = 20000
    print(f"\n### Appending ({n} messages of ~300 bytes)\n")
    print("| target | policy | sessiontree µs/entry | entries/s | Pi 1.6.0 µs/entry | ratio |")
    print("|---|---|---|---|---|---|")
    for target in ["new session", "open 50,000-entry session"]:
        ref_us = None
        d = tempfile.mkdtemp(dir=work)
        rf = os.path.join(d, "ref.jsonl")
        if target != "new session":
            shutil.copy(big, rf)
        os.sync()  # no writeback of the copy during the measurement
        ref_us = json_line(sh(["node", os.path.join(ROOT, "bench", "ref-append.mjs"), "pi16", rf, str(n)], stdout=subprocess.PIPE).stdout)["us_per_entry"]
        for policy in ["none", "batch", "entry"]:
            of = os.path.join(d, f"ours-{policy}.jsonl")
            if target != "new session":
                shutil.copy(big, of)
            os.sync()
            count = n if policy != "entry" else 2000
            r = json_line(sh([ex("append_bench"), of, str(count), policy], stdout=subprocess.PIPE).stdout)
            ratio = f"{ref_us / r['us_per_entry']:.1f}x" if policy == "none" else ""
            print(f"| {target} | {policy} | {r['us_per_entry']:.2f} | {r['entries_per_s']} | {ref_us if policy == 'none' else ''} | {ratio} |")
        shutil.rmtree(d)
    print(f"\nfiles kept in {work}" if args.work else "", file=sys.stderr)
    if not args.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
