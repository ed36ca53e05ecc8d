//! The true-positive set (every kind of credential, in every kind of field a session has)
//! and the look-alike set (ids, hashes, signatures, images, placeholders, code): every
//! true positive is found and redacted, no look-alike is reported.
//!
//! Credentials are generated from a seeded generator (none is a real one); GitHub tokens
//! get their CRC32 checksum computed here, independently of the crate.

use sessiontree_secrets::{find, redact_line, scan_session, KINDS};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize] as char)
            .collect()
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const HEX: &[u8] = b"0123456789abcdef";
const B32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn crc32(data: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|mut c| {
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            c
        })
        .collect();
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc = table[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    crc ^ 0xFFFF_FFFF
}

fn github(rng: &mut Rng, prefix: &str) -> String {
    let body = rng.pick(ALNUM, 30);
    let mut n = crc32(body.as_bytes());
    let digits = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut sum = Vec::new();
    for _ in 0..6 {
        sum.push(digits[(n % 62) as usize]);
        n /= 62;
    }
    sum.reverse();
    format!("{prefix}_{body}{}", String::from_utf8(sum).unwrap())
}

fn b64url(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..(chunk.len() + 1) {
            out.push(B64URL[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn pem(rng: &mut Rng, label: &str, newline: &str) -> String {
    let mut s = format!("-----BEGIN {label}-----{newline}");
    for _ in 0..6 {
        s.push_str(&rng.pick(B64, 64));
        s.push_str(newline);
    }
    s.push_str(&format!("-----END {label}-----"));
    s
}

/// (kind, the text as it appears in a field, the secret that must not survive).
fn true_positives() -> Vec<(&'static str, String, String)> {
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let mut v = Vec::new();
    let mut add = |kind: &'static str, text: String, secret: String| v.push((kind, text, secret));

    let k = pem(&mut r, "RSA PRIVATE KEY", "\n");
    add(
        "private-key",
        format!("cat id_rsa\n{k}\n"),
        k[40..80].to_string(),
    );
    let k = pem(&mut r, "OPENSSH PRIVATE KEY", "\n");
    add("private-key", k.clone(), k[50..90].to_string());
    let k = pem(&mut r, "EC PRIVATE KEY", "\n");
    let cut = k[..200].to_string();
    add(
        "private-key",
        format!("head -c 200 key.pem\n{cut}"),
        cut[40..80].to_string(),
    );
    let id = r.pick(HEX, 40);
    let k = pem(&mut r, "PRIVATE KEY", "\\n");
    let sa = format!(
        "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"demo\",\n  \"private_key_id\": \"{id}\",\n  \"private_key\": \"{k}\\n\",\n  \"client_email\": \"svc@demo.iam.gserviceaccount.com\"\n}}"
    );
    add("gcp-service-account", sa.clone(), id);
    add("private-key", sa, k[40..80].to_string());
    let s = format!("AKIA{}", r.pick(B32, 16));
    add("aws-access-key", format!("export AWS_ACCESS_KEY_ID={s}"), s);
    let s = r.pick(B64, 40);
    add(
        "aws-secret-key",
        format!("[default]\naws_secret_access_key = {s}\n"),
        s,
    );
    let s = r.pick(B64, 40);
    add(
        "aws-secret-key",
        format!("{{\"Credentials\": {{\"SecretAccessKey\": \"{s}\"}}}}"),
        s,
    );
    let s = format!("AIza{}", r.pick(B64URL, 35));
    add("gcp-api-key", format!("maps key: {s}"), s);
    let s = format!("AIza{}", r.pick(B64URL, 35));
    add("google-ai-key", format!("export GEMINI_API_KEY={s}"), s);
    let s = format!("{}==", r.pick(B64, 86));
    add(
        "azure-connection-string",
        format!("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net"),
        s,
    );
    let s = format!("{}%2B{}%3D", r.pick(ALNUM, 20), r.pick(ALNUM, 20));
    add(
        "azure-sas-token",
        format!("https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-01-01T00:00:00Z&spr=https&sig={s}"),
        s,
    );
    for p in ["ghp", "gho", "ghs", "ghu", "ghr"] {
        let s = github(&mut r, p);
        add(
            "github-token",
            format!("git remote set-url origin https://{s}@github.com/o/r"),
            s,
        );
    }
    let s = format!("github_pat_{}_{}", r.pick(ALNUM, 22), r.pick(ALNUM, 59));
    add("github-token", format!("GH_TOKEN={s}"), s);
    let s = format!("glpat-{}", r.pick(B64URL, 20));
    add("gitlab-token", format!("PRIVATE-TOKEN: {s}"), s);
    let s = format!(
        "xoxb-{}-{}-{}",
        r.pick(b"0123456789", 12),
        r.pick(b"0123456789", 13),
        r.pick(ALNUM, 24)
    );
    add("slack-bot-token", format!("SLACK_BOT_TOKEN={s}"), s);
    let s = format!(
        "xoxp-{}-{}-{}-{}",
        r.pick(b"0123456789", 12),
        r.pick(b"0123456789", 12),
        r.pick(b"0123456789", 13),
        r.pick(HEX, 32)
    );
    add("slack-user-token", format!("token {s}"), s);
    let s = format!(
        "T{}/B{}/{}",
        r.pick(b"ABCDEFGHIJ0123456789", 10),
        r.pick(b"ABCDEFGHIJ0123456789", 10),
        r.pick(ALNUM, 24)
    );
    add(
        "slack-webhook",
        format!("curl -X POST https://hooks.slack.com/services/{s} -d '{{}}'"),
        s,
    );
    let s = format!("sk_live_{}", r.pick(ALNUM, 24));
    add("stripe-live-key", format!("stripe.api_key = \"{s}\""), s);
    let s = format!("sk-proj-{}", r.pick(B64URL, 156));
    add("openai-key", format!("OPENAI_API_KEY={s}"), s);
    let s = format!("sk-{}T3BlbkFJ{}", r.pick(ALNUM, 20), r.pick(ALNUM, 20));
    add("openai-key", format!("openai.api_key = '{s}'"), s);
    let s = format!("sk-ant-api03-{}AA", r.pick(B64URL, 93));
    add("anthropic-key", format!("ANTHROPIC_API_KEY={s}"), s);
    let s = format!("sk-ant-oat01-{}AA", r.pick(B64URL, 93));
    add("anthropic-key", format!("{{\"accessToken\":\"{s}\"}}"), s);
    let s = format!("hf_{}", r.pick(ALNUM, 34));
    add(
        "huggingface-token",
        format!("huggingface-cli login --token {s}"),
        s,
    );
    let s = format!("npm_{}", r.pick(ALNUM, 36));
    add(
        "npm-token",
        format!("//registry.npmjs.org/:_authToken={s}"),
        s,
    );
    let s = format!("pypi-AgEIcHlwaS5vcmc{}", r.pick(B64URL, 120));
    add(
        "pypi-token",
        format!("[pypi]\nusername = __token__\npassword = {s}"),
        s,
    );
    let header = b64url(r#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = b64url(r#"{"sub":"1234567890","name":"Ann","iat":1516239022}"#);
    let s = format!("{header}.{payload}.{}", r.pick(B64URL, 43));
    add("jwt", format!("Authorization: Bearer {s}"), s);
    let pw = format!("{}9{}", r.pick(ALNUM, 10), r.pick(ALNUM, 5));
    add(
        "url-password",
        format!("DATABASE_URL=postgres://app:{pw}@db.internal:5432/prod"),
        pw,
    );
    let pw = format!("{}7!{}", r.pick(ALNUM, 8), r.pick(ALNUM, 6));
    add(
        "url-password",
        format!("redis-cli -u redis://default:{pw}@cache.example.net:6379"),
        pw,
    );
    let pw = format!("{}4{}", r.pick(ALNUM, 12), r.pick(ALNUM, 7));
    add("secret-assignment", format!("DB_PASSWORD={pw}"), pw);
    let pw = format!("{}2{}", r.pick(ALNUM, 16), r.pick(ALNUM, 15));
    add(
        "secret-assignment",
        format!("{{\"client_secret\": \"{pw}\", \"client_id\": \"web\"}}"),
        pw,
    );
    let pw = format!("{}3{}", r.pick(ALNUM, 16), r.pick(HEX, 15));
    add("secret-assignment", format!("SECRET_KEY = '{pw}'"), pw);
    v
}

/// A session line putting `text` into one kind of field; the field's path.
fn fields(text: &str) -> Vec<(String, &'static str)> {
    let t = serde_json::to_string(text).unwrap();
    let sig =
        "ErUBCkYIBhgCIkB4c2lnbmF0dXJlAKIAQYLPMN5HHHFPZAM2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";
    let m = |msg: String| {
        format!(
            r#"{{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{msg}}}"#
        )
    };
    vec![
        (
            m(format!(r#"{{"role":"user","content":{t},"timestamp":1}}"#)),
            "message.content",
        ),
        (
            m(format!(
                r#"{{"role":"user","content":[{{"type":"text","text":{t}}}],"timestamp":1}}"#
            )),
            "message.content[0].text",
        ),
        (
            m(format!(
                r#"{{"role":"assistant","content":[{{"type":"thinking","thinking":"hm","thinkingSignature":"{sig}"}},{{"type":"text","text":{t}}}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":1}}"#
            )),
            "message.content[1].text",
        ),
        (
            m(format!(
                r#"{{"role":"assistant","content":[{{"type":"thinking","thinking":{t},"thinkingSignature":"{sig}"}}],"timestamp":1}}"#
            )),
            "message.content[0].thinking",
        ),
        (
            m(format!(
                r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"toolu_01ABCDEFabcdef0123456789","name":"bash","arguments":{{"command":{t}}}}}],"timestamp":1}}"#
            )),
            "message.content[0].arguments.command",
        ),
        (
            m(format!(
                r#"{{"role":"toolResult","toolCallId":"toolu_01ABCDEFabcdef0123456789","toolName":"bash","content":[{{"type":"text","text":{t}}}],"isError":false,"timestamp":1}}"#
            )),
            "message.content[0].text",
        ),
        (
            m(format!(
                r#"{{"role":"toolResult","toolCallId":"call_1","toolName":"read","content":[],"details":{{"stdout":{t}}},"isError":false,"timestamp":1}}"#
            )),
            "message.details.stdout",
        ),
        (
            m(format!(
                r#"{{"role":"bashExecution","command":{t},"output":"","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}}"#
            )),
            "message.command",
        ),
        (
            m(format!(
                r#"{{"role":"bashExecution","command":"env","output":{t},"exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}}"#
            )),
            "message.output",
        ),
        (
            format!(
                r#"{{"type":"custom","customType":"ext","data":{{"note":{t}}},"id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}}"#
            ),
            "data.note",
        ),
        (
            format!(
                r#"{{"type":"custom_message","customType":"ext","content":{t},"display":true,"id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}}"#
            ),
            "content",
        ),
        (
            format!(
                r#"{{"type":"branch_summary","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","fromId":"b1b2c3d4","summary":{t}}}"#
            ),
            "summary",
        ),
        (
            format!(
                r#"{{"type":"compaction","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","summary":{t},"firstKeptEntryId":"b1b2c3d4","tokensBefore":10}}"#
            ),
            "summary",
        ),
        (
            format!(
                r#"{{"type":"session_info","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","name":{t}}}"#
            ),
            "name",
        ),
        (
            format!(
                r#"{{"type":"label","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","targetId":"b1b2c3d4","label":{t}}}"#
            ),
            "label",
        ),
    ]
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"0199a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a04","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/u/p"}"#;

#[test]
fn every_kind_is_covered() {
    let kinds: std::collections::BTreeSet<&str> =
        true_positives().iter().map(|(k, _, _)| *k).collect();
    for k in KINDS {
        if *k == "slack-token" {
            continue; // the other Slack prefixes (xoxa-, xoxe-, xapp-): checked below
        }
        assert!(kinds.contains(k), "no true positive of {k}");
    }
}

#[test]
fn every_true_positive_is_found_in_every_field_and_redacted() {
    for (kind, text, secret) in true_positives() {
        let found = find(&text);
        assert!(
            found.iter().any(|f| f.kind == kind),
            "{kind} not found in {text:?}: {found:?}"
        );
        for (line, path) in fields(&text) {
            let file = format!("{HEADER}\n{line}\n");
            let scan = scan_session(file.as_bytes());
            assert!(scan.session);
            let hit = scan
                .findings
                .iter()
                .find(|f| f.kind == kind && f.field == path)
                .unwrap_or_else(|| panic!("{kind} not found in {path}: {:?}", scan.findings));
            assert_eq!(hit.line, 2);
            assert_eq!(hit.entry_id.as_deref(), Some("a1b2c3d4"));
            assert!(!hit.preview.contains(&secret), "{}", hit.preview);
            for f in &scan.findings {
                assert!(!f.preview.contains(&secret));
            }
            // Redacted: still JSON, the secret gone, ids and signatures as they were.
            let red = redact_line(&line).expect("something to redact");
            let v: serde_json::Value = serde_json::from_str(&red).expect("a redacted line parses");
            let orig: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert!(!red.contains(&secret), "{kind} survived in {path}: {red}");
            assert!(red.contains(&format!("[REDACTED:{kind}]")), "{red}");
            assert_eq!(v["id"], orig["id"]);
            assert_eq!(v["type"], orig["type"]);
            assert_eq!(
                v["message"]["content"][0]["thinkingSignature"],
                orig["message"]["content"][0]["thinkingSignature"]
            );
            assert!(
                sessiontree_secrets::scan_session(format!("{HEADER}\n{red}\n").as_bytes())
                    .findings
                    .is_empty(),
                "{red}"
            );
        }
    }
}

#[test]
fn the_header_cwd_is_scanned() {
    let pw = "Zk3vQ9xLmP2wRt7Y";
    let file = format!(
        r#"{{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/mnt/smb://svc:{pw}@files.corp/share"}}"#
    );
    let scan = scan_session(file.as_bytes());
    assert_eq!(scan.findings.len(), 1, "{:?}", scan.findings);
    let f = &scan.findings[0];
    assert!(f.header && f.entry_id.is_none() && f.field == "cwd" && f.kind == "url-password");
}

#[test]
fn credentials_named_by_their_key_are_found() {
    let mut r = Rng(77);
    let s = r.pick(B64, 40);
    let pw = format!("{}5{}", r.pick(ALNUM, 10), r.pick(ALNUM, 6));
    let line = format!(
        r#"{{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"c","name":"run","arguments":{{"env":{{"AWS_SECRET_ACCESS_KEY":"{s}","DB_PASSWORD":"{pw}","HOME":"/root"}}}}}}]}}}}"#
    );
    let scan = scan_session(format!("{HEADER}\n{line}\n").as_bytes());
    let got: Vec<(&str, &str)> = scan
        .findings
        .iter()
        .map(|f| (f.kind, f.field.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "aws-secret-key",
                "message.content[0].arguments.env.AWS_SECRET_ACCESS_KEY"
            ),
            (
                "secret-assignment",
                "message.content[0].arguments.env.DB_PASSWORD"
            ),
        ]
    );
    let red = redact_line(&line).unwrap();
    assert!(
        red.contains(r#""AWS_SECRET_ACCESS_KEY":"[REDACTED:aws-secret-key]""#),
        "{red}"
    );
    assert!(!red.contains(&s) && !red.contains(&pw));
}

#[test]
fn other_slack_tokens() {
    let mut r = Rng(3);
    let s = format!("xoxe-1-{}", r.pick(ALNUM, 40).replace('a', "7"));
    assert_eq!(find(&format!("refresh {s}"))[0].kind, "slack-token");
}

#[test]
fn escapes_that_hide_an_anchor_are_decoded() {
    let mut r = Rng(11);
    let s = format!("AKIA{}", r.pick(B32, 16));
    // `\u0041` is `A`: the raw bytes do not hold the anchor.
    let hidden = format!("\\u0041{}", &s[1..]);
    let line = format!(
        r#"{{"type":"message","id":"x","parentId":null,"timestamp":"t","message":{{"role":"user","content":"key {hidden}"}}}}"#
    );
    let scan = scan_session(format!("{HEADER}\n{line}\n").as_bytes());
    assert_eq!(scan.findings.len(), 1);
    assert_eq!(scan.findings[0].kind, "aws-access-key");
}

/// Text that looks like a credential and is not one.
fn look_alikes() -> Vec<String> {
    let mut r = Rng(0xdead_beef_0042);
    let mut v: Vec<String> = Vec::new();
    for _ in 0..5 {
        v.push(format!(
            "{}-{}-4{}-a{}-{}",
            r.pick(HEX, 8),
            r.pick(HEX, 4),
            r.pick(HEX, 3),
            r.pick(HEX, 3),
            r.pick(HEX, 12)
        ));
        v.push(format!("commit {}", r.pick(HEX, 40)));
        v.push(format!("sha256:{}", r.pick(HEX, 64)));
        v.push(format!("Merge: {} {}", r.pick(HEX, 7), r.pick(HEX, 7)));
        v.push(format!("data:image/png;base64,{}", r.pick(B64, 3000)));
        v.push(format!("{}==", r.pick(B64, 1022)));
        v.push(format!("msg_01{}", r.pick(ALNUM, 22)));
        v.push(format!("toolu_01{}", r.pick(ALNUM, 22)));
        v.push(format!("chatcmpl-{}", r.pick(ALNUM, 29)));
        v.push(format!("resp_{}", r.pick(HEX, 48)));
        v.push(format!("/tmp/{}", r.pick(ALNUM, 40)));
    }
    for s in [
        "AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "ghp_zQWBuTSOoRi4A9spHcVY5ncnsDkxkJ0mLq18",
        "export GITHUB_TOKEN=${GITHUB_TOKEN}",
        "password = os.environ[\"DB_PASSWORD\"]",
        "password: ${DB_PASSWORD}",
        "api_key = get_api_key()",
        "secret = settings.SECRET_KEY",
        "token = response.json()[\"access_token\"]",
        "max_tokens=4096",
        "tokenizer = AutoTokenizer.from_pretrained(\"bert-base-uncased\")",
        "The secret to fast code is measuring it.",
        "secret_name = \"prod/db/credentials\"",
        "postgres://user:password@localhost:5432/db",
        "postgres://postgres:postgres@localhost/db",
        "mysql://root:${MYSQL_ROOT_PASSWORD}@db/app",
        "https://user:<password>@example.com",
        "git clone git@github.com:org/repo.git",
        "if line.startswith(\"-----BEGIN PRIVATE KEY-----\"):",
        "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEx4w2kZ9LQqzPqF3Xkv5vR8d1yq4aB0mD\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ6rS0bFXbQpJx4w2kZ9LQqzPqF3Xkv5vR8d1yq4aB0mDw\n-----END CERTIFICATE-----",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "xoxb-your-bot-token-here",
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "sk-proj-...",
        "OPENAI_API_KEY=sk-...",
        "Set ANTHROPIC_API_KEY=sk-ant-... in your shell",
        "hf_hub_download(repo_id=\"bert-base-uncased\", filename=\"config.json\")",
        "npm_config_cache=/home/u/.npm",
        "eyJhbGciOiJIUzI1NiJ9",
        "The pypi-AgE prefix marks PyPI tokens",
        "https://account.blob.core.windows.net/c?restype=container&comp=list",
        "AccountKey=<your-account-key>",
        "\"totalTokens\": 12345",
        "password_hash = bcrypt.hashpw(pw, salt)",
        "Use --password-stdin to read the password",
        "secret_key_base: <%= ENV[\"SECRET_KEY_BASE\"] %>",
        "GR1348941 is the runner token prefix",
        "client_secret: \"YOUR_CLIENT_SECRET\"",
        "api_key: xxxxxxxxxxxxxxxxxxxx",
        "PASSWORD=changeme123",
    ] {
        v.push(s.to_string());
    }
    v
}

#[test]
fn no_look_alike_is_reported() {
    for text in look_alikes() {
        let f = find(&text);
        assert!(f.is_empty(), "look-alike reported: {text:?}: {f:?}");
        for (line, _) in fields(&text) {
            let scan = scan_session(format!("{HEADER}\n{line}\n").as_bytes());
            assert!(scan.findings.is_empty(), "{line}: {:?}", scan.findings);
            assert!(redact_line(&line).is_none(), "{line}");
        }
    }
}

#[test]
fn ids_signatures_and_images_are_never_scanned() {
    let mut r = Rng(99);
    let token = github(&mut r, "ghp");
    let key = format!("AKIA{}", r.pick(B32, 16));
    // Credential-shaped text in every field that must reach its reader unchanged.
    let line = format!(
        r#"{{"type":"message","id":"{key}","parentId":"{token}","timestamp":"t","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"ok","thinkingSignature":"{token}"}},{{"type":"text","text":"hi","textSignature":"{key}"}},{{"type":"reasoning","encrypted_content":"{token}"}},{{"type":"image","data":"{}{key}","mimeType":"image/png"}}],"responseId":"{token}"}}}}"#,
        r.pick(B64, 200)
    );
    let scan = scan_session(format!("{HEADER}\n{line}\n").as_bytes());
    assert!(scan.findings.is_empty(), "{:?}", scan.findings);
    assert!(redact_line(&line).is_none());
}
