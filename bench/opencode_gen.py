"""Generates an OpenCode database for the import benchmark: COUNT sessions made from the
recorded fixture's main session (its messages and parts, with new ids and texts, each turn
repeated to reach about TOTAL_MB), in the fixture's schema.

    python3 bench/opencode_gen.py FIXTURE_DB OUT_DB COUNT TOTAL_MB  (seeded: same output)"""
import json, random, sqlite3, sys

src, out, count, mb = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
rng = random.Random(20261201)
s = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
d = sqlite3.connect(out)
d.execute("PRAGMA journal_mode=WAL")
for (sql,) in s.execute("select sql from sqlite_master where type='table' and name in ('project','session','message','part','event')"):
    d.execute(sql)
d.executemany("insert into project values (" + ",".join("?" * len(s.execute("select * from project").description)) + ")",
              s.execute("select * from project").fetchall())
main = "ses_dce73b1eeffenoobMrgAxGFH3S"
srow = s.execute("select * from session where id = ?", (main,)).fetchone()
msgs = s.execute("select id, time_created, time_updated, data from message where session_id = ? order by id", (main,)).fetchall()
parts = {}
for pid, mid, tc, tu, data in s.execute("select id, message_id, time_created, time_updated, data from part where session_id = ?", (main,)):
    parts.setdefault(mid, []).append((pid, tc, tu, data))
per = mb * 1e6 / count
words = "the build the test a fix cart total coupon energy step drift value output".split()
scol = [c[0] for c in s.execute("select * from session").description]
for n in range(count):
    sid = f"ses_bench{n:06d}{rng.getrandbits(40):010x}"
    t0 = 1790000000000 + n * 3_600_000
    row = dict(zip(scol, srow))
    row.update(id=sid, time_created=t0, time_updated=t0 + 60000, title=f"Bench session {n}",
               directory=f"/home/dev/project{n % 20}")
    d.execute(f"insert into session ({','.join(row)}) values ({','.join('?' * len(row))})", list(row.values()))
    size, rep, k = 0, 0, 0
    while size < per:
        for mid, tc, tu, data in msgs:
            k += 1
            nmid = f"msg_b{n:06d}{k:06d}"
            t = t0 + k * 1000
            info = json.loads(data)
            info.setdefault("time", {})["created"] = t
            if "completed" in info["time"]:
                info["time"]["completed"] = t + 500
            if info.get("summary") is True:
                continue
            dj = json.dumps(info)
            d.execute("insert into message values (?,?,?,?,?)", (nmid, sid, t, t, dj))
            size += len(dj)
            for j, (pid, ptc, ptu, pdata) in enumerate(parts.get(mid, [])):
                p = json.loads(pdata)
                if p.get("type") == "compaction":
                    p = {"type": "text", "text": "Carry on"}
                if p.get("type") in ("text", "reasoning"):
                    p["text"] = " ".join(rng.choice(words) for _ in range(rng.randint(20, 400)))
                pj = json.dumps(p)
                d.execute("insert into part values (?,?,?,?,?,?)", (f"prt_b{n:06d}{k:06d}{j:02d}", nmid, sid, t, t, pj))
                size += len(pj)
        rep += 1
d.commit()
d.execute("PRAGMA wal_checkpoint(TRUNCATE)")
d.close()
