#!/usr/bin/env python3
"""Writes the seed corpora fuzz/seeds/{load,canonicalize}/ from a few small real-shaped
session lines (format v3, plus v1/v2 headers and damaged variants). Deterministic."""
import os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
H3 = '{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/w"}'
H1 = '{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}'
H2 = '{"type":"session","version":2,"id":"v2","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}'
E = [
    '{"type":"message","id":"a1","parentId":null,"timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1733234401000}}',
    '{"type":"message","id":"a2","parentId":"a1","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"cmd":"ls"}}],"provider":"p","model":"m","usage":{"input":1,"output":2},"stopReason":"toolUse","timestamp":1733234402000}}',
    '{"type":"message","id":"a3","parentId":"a2","timestamp":"2024-12-03T14:00:03.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":1733234403000}}',
    '{"type":"message","id":"s0","parentId":"a3","timestamp":"2024-12-03T14:00:03.500Z","message":{"role":"system","content":"be brief","sections":{"a":"x","b":null},"toolsAdded":[{"name":"t"}],"timestamp":1733234403500}}',
    '{"type":"compaction","id":"a4","parentId":"s0","timestamp":"2024-12-03T14:00:04.000Z","summary":"s","firstKeptEntryId":"a2","tokensBefore":100,"systemMessage":{"role":"system","content":"be brief"}}',
    '{"type":"branch_summary","id":"a5","parentId":"a1","timestamp":"2024-12-03T14:00:05.000Z","fromId":"a4","summary":"went elsewhere"}',
    '{"type":"label","id":"a6","parentId":"a5","timestamp":"2024-12-03T14:00:06.000Z","targetId":"a1","label":"start"}',
    '{"type":"custom_message","customType":"note","content":"c","display":true,"id":"a7","parentId":"a6","timestamp":"2024-12-03T14:00:07.000Z"}',
    '{"type":"context_edit","id":"a8","parentId":"a7","timestamp":"2024-12-03T14:00:08.000Z","targetId":"a2","replacement":{"content":"edited"}}',
    '{"type":"session_info","id":"a9","parentId":"a8","timestamp":"2024-12-03T14:00:09.000Z","name":"n"}',
    '{"type":"model_change","id":"b1","parentId":"a9","timestamp":"2024-12-03T14:00:10.000Z","provider":"p","modelId":"m"}',
    '{"type":"thinking_level_change","id":"b2","parentId":"b1","timestamp":"2024-12-03T14:00:11.000Z","thinkingLevel":"high"}',
    '{"type":"custom","customType":"state","data":{"k":[1,2.5e3,-0,"\\u00e9\\ud83d\\ude00"]},"id":"b6","parentId":"b2","timestamp":"2024-12-03T14:00:12.000Z"}',
    '{"type":"message","id":"b5","parentId":"b6","timestamp":"2024-12-03T14:00:13.000Z","message":{"role":"bashExecution","command":"ls","output":"o","exitCode":1,"truncated":true,"fullOutputPath":"/tmp/o"}}',
    '{"type":"context_edit","id":"b7","parentId":"b5","timestamp":"2024-12-03T14:00:14.000Z","targetId":"a7","replacement":null}',
]
V1 = [
    '{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}',
    '{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"hookMessage","content":"h"}}',
    '{"type":"compaction","timestamp":"2024-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":10}',
]

def lines(*ls, end="\n"):
    return ("\n".join(ls) + end).encode()

load = {
    "full": lines(H3, *E),
    "small": lines(H3, E[0], E[1]),
    "v1": lines(H1, *V1),
    "v2": lines(H2, E[0], V1[1].replace('"timestamp"', '"id":"h1","parentId":"a1","timestamp"')),
    "torn": lines(H3, E[0], E[1])[:-40],
    "no-newline": lines(H3, E[0], end=""),
    "junk": lines(H3, "null", "42", "[1]", "false", '""', "{}", "not json", H3, E[0]),
    "cycle": lines(H3, E[0].replace('"parentId":null', '"parentId":"a2"'), E[1]),
    "dup": lines(H3, E[0], E[1], E[0], E[2]),
    "orphan": lines(H3, E[2], E[5]),
    "crlf": lines(H3, E[0]).replace(b"\n", b"\r\n"),
    "bad-utf8": lines(H3, E[0]).replace(b"hello", b"he\xffllo"),
    "empty": b"",
    "not-session": lines(E[0]),
    "newer": lines(H3.replace('"version":3', '"version":9'), E[0]),
}
canon = {
    "obj": b'{"a":1,"b":[true,false,null],"c":{"d":"e"},"a":2}',
    "numbers": b'[0,-0,1e400,-1e-400,1.5E+3,123456789012345678901234567890,0.1,5e-324]',
    "strings": b'["\\u0000\\u001f\\"\\\\\\/\\b\\f\\n\\r\\t","\\ud800","\\udc00\\ud800","\xc3\xa9\xf0\x9f\x98\x80"]',
    "keys": b'{"__proto__":1,"1":2,"0":3,"b":4,"a":5,"4294967295":6,"01":7}',
    "ws": b' \t\r\n{ "a" : [ 1 , 2 ] } \n',
    "deep": b"[" * 64 + b"]" * 64,
    "scalar": b"\"s\"",
    "bad": b'{"a":1,}',
}
for i, l in enumerate([H3] + E + V1):
    canon[f"line{i:02}"] = l.encode()

for target, seeds in (("load", load), ("canonicalize", canon)):
    d = os.path.join(HERE, "seeds", target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
