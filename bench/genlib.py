"""What the generators of agents' transcripts share (bench/import_gemini_gen.py,
bench/import_copilot_gen.py): the filler words, deterministic ids, times as JavaScript's
toISOString writes them, and one JSON line as the agents write it."""
import json
import time

WORDS = "the of and to in is that for it as was with be by on not he this are or his from at".split()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def uid(k, n):
    return f"{k:08x}-{n:04x}-4{n % 4096:03x}-8{(k * 7 + n) % 4096:03x}-{(k * 31 + n * 17) % (1 << 48):012x}"


def ts(ms):
    s, ms = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{ms:03d}Z"


def line(o):
    return json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n"
