//! Generated credentials of every kind (a seeded generator: none is a real one; GitHub
//! tokens get their CRC32 checksum computed here, independently of the crate) and session
//! lines that put a text into each kind of field. Used by the secrets crate's tests and the
//! CLI's.

use crate::agent::json_string;
use crate::Rng;

pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub const HEX: &[u8] = b"0123456789abcdef";
pub const B32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

pub fn crc32(data: &[u8]) -> u32 {
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

pub fn github(rng: &mut Rng, prefix: &str) -> String {
    let body = rng.text(ALNUM, 30);
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

pub fn b64url(s: &str) -> String {
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

pub fn pem(rng: &mut Rng, label: &str, newline: &str) -> String {
    let mut s = format!("-----BEGIN {label}-----{newline}");
    for _ in 0..6 {
        s.push_str(&rng.text(B64, 64));
        s.push_str(newline);
    }
    s.push_str(&format!("-----END {label}-----"));
    s
}

/// (kind, the text as it appears in a field, the secret that must not survive).
pub fn true_positives() -> Vec<(&'static str, String, String)> {
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let mut v = Vec::new();
    // `text` holds the secret where it says `{s}` (a private key's text holds it as is).
    let mut add = |kind: &'static str, text: &str, secret: String| {
        v.push((kind, text.replace("{s}", &secret), secret))
    };

    let k = pem(&mut r, "RSA PRIVATE KEY", "\n");
    add(
        "private-key",
        &format!("cat id_rsa\n{k}\n"),
        k[40..80].to_string(),
    );
    let k = pem(&mut r, "OPENSSH PRIVATE KEY", "\n");
    add("private-key", &k, k[50..90].to_string());
    let k = pem(&mut r, "EC PRIVATE KEY", "\n");
    let cut = k[..200].to_string();
    add(
        "private-key",
        &format!("head -c 200 key.pem\n{cut}"),
        cut[40..80].to_string(),
    );
    let id = r.text(HEX, 40);
    let k = pem(&mut r, "PRIVATE KEY", "\\n");
    let sa = format!(
        "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"demo\",\n  \"private_key_id\": \"{id}\",\n  \"private_key\": \"{k}\\n\",\n  \"client_email\": \"svc@demo.iam.gserviceaccount.com\"\n}}"
    );
    add("gcp-service-account", &sa, id);
    add("private-key", &sa, k[40..80].to_string());
    let s = format!("AKIA{}", r.text(B32, 16));
    add("aws-access-key", "export AWS_ACCESS_KEY_ID={s}", s);
    let s = r.text(B64, 40);
    add(
        "aws-secret-key",
        "[default]\naws_secret_access_key = {s}\n",
        s,
    );
    let s = r.text(B64, 40);
    add(
        "aws-secret-key",
        "{\"Credentials\": {\"SecretAccessKey\": \"{s}\"}}",
        s,
    );
    let s = format!("AIza{}", r.text(B64URL, 35));
    add("gcp-api-key", "maps key: {s}", s);
    let s = format!("AIza{}", r.text(B64URL, 35));
    add("google-ai-key", "export GEMINI_API_KEY={s}", s);
    let s = format!("{}==", r.text(B64, 86));
    add("azure-connection-string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net", s);
    let s = format!("{}%2B{}%3D", r.text(ALNUM, 20), r.text(ALNUM, 20));
    add("azure-sas-token", "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-01-01T00:00:00Z&spr=https&sig={s}", s);
    for p in ["ghp", "gho", "ghs", "ghu", "ghr"] {
        let s = github(&mut r, p);
        add(
            "github-token",
            "git remote set-url origin https://{s}@github.com/o/r",
            s,
        );
    }
    let s = format!("github_pat_{}_{}", r.text(ALNUM, 22), r.text(ALNUM, 59));
    add("github-token", "GH_TOKEN={s}", s);
    let s = format!("glpat-{}", r.text(B64URL, 20));
    add("gitlab-token", "PRIVATE-TOKEN: {s}", s);
    let s = format!(
        "xoxb-{}-{}-{}",
        r.text(b"0123456789", 12),
        r.text(b"0123456789", 13),
        r.text(ALNUM, 24)
    );
    add("slack-bot-token", "SLACK_BOT_TOKEN={s}", s);
    let s = format!(
        "xoxp-{}-{}-{}-{}",
        r.text(b"0123456789", 12),
        r.text(b"0123456789", 12),
        r.text(b"0123456789", 13),
        r.text(HEX, 32)
    );
    add("slack-user-token", "token {s}", s);
    let s = format!(
        "T{}/B{}/{}",
        r.text(b"ABCDEFGHIJ0123456789", 10),
        r.text(b"ABCDEFGHIJ0123456789", 10),
        r.text(ALNUM, 24)
    );
    add(
        "slack-webhook",
        "curl -X POST https://hooks.slack.com/services/{s} -d '{}'",
        s,
    );
    let s = format!("sk_live_{}", r.text(ALNUM, 24));
    add("stripe-live-key", "stripe.api_key = \"{s}\"", s);
    let s = format!("sk-proj-{}", r.text(B64URL, 156));
    add("openai-key", "OPENAI_API_KEY={s}", s);
    let s = format!("sk-{}T3BlbkFJ{}", r.text(ALNUM, 20), r.text(ALNUM, 20));
    add("openai-key", "openai.api_key = '{s}'", s);
    let s = format!("sk-ant-api03-{}AA", r.text(B64URL, 93));
    add("anthropic-key", "ANTHROPIC_API_KEY={s}", s);
    let s = format!("sk-ant-oat01-{}AA", r.text(B64URL, 93));
    add("anthropic-key", "{\"accessToken\":\"{s}\"}", s);
    let s = format!("hf_{}", r.text(ALNUM, 34));
    add("huggingface-token", "huggingface-cli login --token {s}", s);
    let s = format!("npm_{}", r.text(ALNUM, 36));
    add("npm-token", "//registry.npmjs.org/:_authToken={s}", s);
    let s = format!("pypi-AgEIcHlwaS5vcmc{}", r.text(B64URL, 120));
    add(
        "pypi-token",
        "[pypi]\nusername = __token__\npassword = {s}",
        s,
    );
    let header = b64url(r#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = b64url(r#"{"sub":"1234567890","name":"Ann","iat":1516239022}"#);
    let s = format!("{header}.{payload}.{}", r.text(B64URL, 43));
    add("jwt", "Authorization: Bearer {s}", s);
    let pw = format!("{}9{}", r.text(ALNUM, 10), r.text(ALNUM, 5));
    add(
        "url-password",
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/prod",
        pw,
    );
    let pw = format!("{}7!{}", r.text(ALNUM, 8), r.text(ALNUM, 6));
    add(
        "url-password",
        "redis-cli -u redis://default:{s}@cache.example.net:6379",
        pw,
    );
    let pw = format!("{}4{}", r.text(ALNUM, 12), r.text(ALNUM, 7));
    add("secret-assignment", "DB_PASSWORD={s}", pw);
    let pw = format!("{}2{}", r.text(ALNUM, 16), r.text(ALNUM, 15));
    add(
        "secret-assignment",
        "{\"client_secret\": \"{s}\", \"client_id\": \"web\"}",
        pw,
    );
    let pw = format!("{}3{}", r.text(ALNUM, 16), r.text(HEX, 15));
    add("secret-assignment", "SECRET_KEY = '{s}'", pw);
    v
}

/// A session line putting `text` into one kind of field; the field's path.
pub fn fields(text: &str) -> Vec<(String, &'static str)> {
    let t = json_string(text);
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

pub const HEADER: &str = r#"{"type":"session","version":3,"id":"0199a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a04","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/u/p"}"#;
