#!/usr/bin/env python3
"""The targets of `sessiontree watch` (issue 26), measured on the binary BIN:

    python3 bench/watch_bench.py BIN DATA_DIR [latency|idle|catchup ...]

latency  200 lines appended one at a time (40-120 ms apart) to a watched Claude Code
         transcript: the time from each write until the line's uuid is in the Pi copy;
         median and p99, for all lines and apart for user lines (final when written) and
         assistant lines (held until the next line follows or the transcript is quiet for
         1 s: a response can still grow). A new transcript likewise (20 of them).
idle     2,000 transcripts watched, nothing changing: CPU time of the watch (utime + stime
         from /proc) over 60 s (IDLE_SECONDS) after the catch-up, RSS at its start and end.
catchup  1,000 transcripts (half Claude Code, half Codex, bench/import_gen.py): the watch's
         start to its "caught up" line, against `import claude` + `import codex` of the same
         into an empty agent dir.
Data (generated) stays in DATA_DIR, never in the repo.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid

BIN, DATA = sys.argv[1], sys.argv[2]
WHAT = sys.argv[3:] or ["latency", "idle", "catchup"]
HERE = os.path.dirname(os.path.abspath(__file__))


def env(root):
    e = dict(os.environ)
    e.update(
        PI_CODING_AGENT_DIR=os.path.join(root, "agent"),
        CLAUDE_CONFIG_DIR=os.path.join(root, "claude"),
        CODEX_HOME=os.path.join(root, "codex"),
    )
    e.pop("PI_CODING_AGENT_SESSION_DIR", None)
    e.pop("SESSIONTREE_ARCHIVE", None)
    return e


def start_watch(root, log):
    f = open(log, "a")
    return subprocess.Popen([BIN, "watch"], env=env(root), stdout=subprocess.DEVNULL, stderr=f)


def wait_for(pred, timeout=120.0, step=0.002):
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if pred():
            return True
        time.sleep(step)
    return False


def read_all(folder):
    """The bytes of every session file under `folder`, in walk order."""
    parts = []
    for d, _, fs in os.walk(folder):
        for f in fs:
            if f.endswith(".jsonl"):
                with open(os.path.join(d, f), "rb") as h:
                    parts.append(h.read())
    return b"".join(parts)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def line(o):
    return (json.dumps(o, separators=(",", ":")) + "\n").encode()


def claude_lines(session, n, cwd="/home/dev/bench"):
    """A linear Claude Code conversation: user, assistant, user, ... (n lines)."""
    parent = None
    for i in range(n):
        u = str(uuid.uuid4())
        ts = f"2026-12-01T10:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
        base = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
                "sessionId": session, "version": "2.0.0", "uuid": u, "timestamp": ts}
        if i % 2 == 0:
            o = dict(base, type="user", message={"role": "user", "content": f"question {i}: what about the cart total?"})
        else:
            o = dict(base, type="assistant", requestId=f"req_{i}", message={
                "id": f"msg_{session[:8]}_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": f"answer {i}: the total is computed per item."}],
                "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 20}})
        parent = u
        yield u, i % 2 == 0, line(o)


def latency():
    root = os.path.join(DATA, "latency")
    shutil.rmtree(root, ignore_errors=True)
    proj = os.path.join(root, "claude/projects/-home-dev-bench")
    os.makedirs(proj)
    os.makedirs(os.path.join(root, "codex/sessions"))
    sid = str(uuid.uuid4())
    src = os.path.join(proj, sid + ".jsonl")
    lines = list(claude_lines(sid, 201))
    with open(src, "wb") as f:
        f.write(lines[0][2])
    w = start_watch(root, os.path.join(root, "watch.log"))
    sessions = os.path.join(root, "agent/sessions")
    assert wait_for(lambda: lines[0][0].encode() in read_all(sessions), 30), "no first copy"
    import random
    rng = random.Random(26)
    user, asst = [], []
    for u, is_user, b in lines[1:]:
        with open(src, "ab") as f:
            f.write(b)
        t0 = time.monotonic()
        key = u.encode()
        ok = wait_for(lambda: key in read_all(sessions), 30, 0.002)
        dt = time.monotonic() - t0
        assert ok, f"line {u} never arrived"
        (user if is_user else asst).append(dt)
        time.sleep(rng.uniform(0.04, 0.12))
    new = []
    for k in range(20):
        sid = str(uuid.uuid4())
        ls = list(claude_lines(sid, 2))
        t0 = time.monotonic()
        with open(os.path.join(proj, sid + ".jsonl"), "wb") as f:
            f.write(ls[0][2])
        key = ls[0][0].encode()
        assert wait_for(lambda: key in read_all(sessions), 30)
        new.append(time.monotonic() - t0)
    w.kill()
    w.wait()
    allx = user + asst
    for name, xs in (("all lines", allx), ("user lines", user), ("assistant lines", asst), ("new transcripts", new)):
        print(f"latency {name:16} n={len(xs):3}  median {statistics.median(xs) * 1000:7.1f} ms  p99 {pct(xs, 99) * 1000:7.1f} ms  max {max(xs) * 1000:7.1f} ms")


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tck


def proc_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    return 0


def generated(root, count, mb):
    if not os.path.isdir(os.path.join(root, "claude")):
        subprocess.run([sys.executable, os.path.join(HERE, "import_gen.py"), root, str(count), str(mb)], check=True)
    # Transcripts last written an hour ago, as the ones a user has lying around are: fresh
    # files would be held back by the watch for `--open-quiet` (30 s) and completed then,
    # which is the catch-up's work, not idling.
    old = time.time() - 3600
    for agent in ("claude", "codex"):
        for d, _, fs in os.walk(os.path.join(root, agent)):
            for f in fs:
                if f.endswith(".jsonl"):
                    os.utime(os.path.join(d, f), (old, old))


def caught_up(log):
    def f():
        try:
            with open(log) as h:
                return "caught up:" in h.read()
        except OSError:
            return False
    return f


def idle():
    root = os.path.join(DATA, "idle")
    generated(root, 2000, 200)
    shutil.rmtree(os.path.join(root, "agent"), ignore_errors=True)
    log = os.path.join(root, "watch.log")
    if os.path.exists(log):
        os.remove(log)
    w = start_watch(root, log)
    assert wait_for(caught_up(log), 900, 0.2), "no catch-up"
    time.sleep(5)
    secs = float(os.environ.get("IDLE_SECONDS", "60"))
    c0, r0 = proc_cpu(w.pid), proc_rss(w.pid)
    time.sleep(secs)
    c1, r1 = proc_cpu(w.pid), proc_rss(w.pid)
    w.kill()
    w.wait()
    n = sum(1 for d, _, fs in os.walk(os.path.join(root, "claude")) for f in fs if f.endswith(".jsonl"))
    n += sum(1 for d, _, fs in os.walk(os.path.join(root, "codex")) for f in fs if f.endswith(".jsonl"))
    print(f"idle: {n} transcripts watched, {secs:.0f} s: {c1 - c0:.3f} s CPU; RSS {r0} KiB -> {r1} KiB")


def catchup():
    root = os.path.join(DATA, "catchup")
    generated(root, 1000, 200)
    for d in ("agent", "agent-import"):
        shutil.rmtree(os.path.join(root, d), ignore_errors=True)
    e = env(root)
    e["PI_CODING_AGENT_DIR"] = os.path.join(root, "agent-import")
    subprocess.run(["sync"])
    t0 = time.monotonic()
    for agent in ("claude", "codex"):
        subprocess.run([BIN, "import", agent], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t_import = time.monotonic() - t0
    subprocess.run(["sync"])
    log = os.path.join(root, "watch.log")
    if os.path.exists(log):
        os.remove(log)
    t0 = time.monotonic()
    w = start_watch(root, log)
    assert wait_for(caught_up(log), 900, 0.01), "no catch-up"
    t_watch = time.monotonic() - t0
    w.kill()
    w.wait()
    same = read_all(os.path.join(root, "agent/sessions")).count(b"\n")
    ref = read_all(os.path.join(root, "agent-import/sessions")).count(b"\n")
    print(f"catch-up of 1000 transcripts: watch {t_watch:.2f} s, import claude + import codex {t_import:.2f} s (lines written {same} vs {ref})")


for w in WHAT:
    {"latency": latency, "idle": idle, "catchup": catchup}[w]()
