"""Turns an OpenCode recording (record.sh's opencode part) into committed fixtures.

    python3 opencode_fixture.py RECORD_DIR FIXTURE_DIR STORAGE_FIXTURE_DIR

RECORD_DIR holds proj/ (the cwd), home/ (HOME, with .local/share/opencode/opencode.db) and
requests.jsonl (what the scripted endpoint received). Writes FIXTURE_DIR/opencode.db with
only the tables the import reads (session, message, part, event, project: no account or
credential rows), the recording's paths renamed to /home/dev/demo, in rollback-journal
mode (one file); FIXTURE_DIR/requests.json, every request OpenCode sent for a turn of a
session (its `x-session-id` header; title and summarization requests left out), as
{session, messages} without the system prompt; and STORAGE_FIXTURE_DIR/storage/, the same
sessions in the JSON tree older releases kept (storage/session/<project>/<id>.json,
storage/message/<session>/<id>.json, storage/part/<message>/<id>.json: each row's data
with its ids), for the reader of that layout."""
import json, os, shutil, sqlite3, sys

REC, FIX, FIX_STORAGE = (os.path.abspath(a) for a in sys.argv[1:4])
PROJ = os.path.join(REC, "proj")


def tidy(s):
    return s.replace(PROJ, "/home/dev/demo") if isinstance(s, str) else s


src = sqlite3.connect("file:%s?mode=ro" % os.path.join(REC, "home/.local/share/opencode/opencode.db"), uri=True)
os.makedirs(FIX, exist_ok=True)
out_path = os.path.join(FIX, "opencode.db")
if os.path.exists(out_path):
    os.remove(out_path)
dst = sqlite3.connect(out_path)
dst.execute("PRAGMA journal_mode=DELETE")
for table in ("project", "session", "message", "part", "event"):
    (sql,) = src.execute("select sql from sqlite_master where type='table' and name=?", (table,)).fetchone()
    dst.execute(sql)
    cols = [r[1] for r in src.execute(f"pragma table_info({table})")]
    rows = src.execute(f"select * from {table} order by rowid").fetchall()
    dst.executemany(
        f"insert into {table} values ({','.join('?' * len(cols))})",
        [tuple(tidy(v) for v in r) for r in rows],
    )
dst.commit()
dst.execute("VACUUM")
dst.close()

requests = []
for line in open(os.path.join(REC, "requests.jsonl")):
    r = json.loads(line)
    body = r["body"]
    if not body.get("tools"):
        continue
    msgs = [m for m in body["messages"] if m.get("role") != "system"]
    requests.append({"session": r["headers"].get("x-session-id"), "messages": json.loads(tidy(json.dumps(msgs)))})
with open(os.path.join(FIX, "requests.json"), "w") as f:
    json.dump(requests, f, indent=1, ensure_ascii=False)
    f.write("\n")

storage = os.path.join(FIX_STORAGE, "storage")
shutil.rmtree(storage, ignore_errors=True)


def put(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)


db = sqlite3.connect("file:%s?mode=ro" % out_path, uri=True)
for sid, pid, parent, directory, title, version, created, updated, revert in db.execute(
    "select id, project_id, parent_id, directory, title, version, time_created, time_updated, revert from session"
):
    info = {"id": sid, "version": version, "projectID": pid, "directory": directory, "title": title,
            "time": {"created": created, "updated": updated}}
    if parent:
        info["parentID"] = parent
    if revert:
        info["revert"] = json.loads(revert)
    put(os.path.join(storage, "session", pid, sid + ".json"), info)
for mid, sid, data in db.execute("select id, session_id, data from message"):
    put(os.path.join(storage, "message", sid, mid + ".json"), {"id": mid, "sessionID": sid, **json.loads(data)})
for pid, mid, sid, data in db.execute("select id, message_id, session_id, data from part"):
    put(os.path.join(storage, "part", mid, pid + ".json"), {"id": pid, "sessionID": sid, "messageID": mid, **json.loads(data)})
print(f"{len(requests)} request(s) -> {FIX}")
