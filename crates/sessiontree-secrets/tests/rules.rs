//! The true-positive set (every kind of credential, in every kind of field a session has)
//! and the look-alike set (ids, hashes, signatures, images, placeholders, code): every
//! true positive is found and redacted, no look-alike is reported.
//!
//! Credentials are generated from a seeded generator (none is a real one); GitHub tokens
//! get their CRC32 checksum computed here, independently of the crate.

use sessiontree_secrets::{find, redact_line, scan_session, KINDS};

use sessiontree_testkit::creds::*;
use sessiontree_testkit::Rng;

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
    let s = r.text(B64, 40);
    let pw = format!("{}5{}", r.text(ALNUM, 10), r.text(ALNUM, 6));
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
    let s = format!("xoxe-1-{}", r.text(ALNUM, 40).replace('a', "7"));
    assert_eq!(find(&format!("refresh {s}"))[0].kind, "slack-token");
}

#[test]
fn escapes_that_hide_an_anchor_are_decoded() {
    let mut r = Rng(11);
    let s = format!("AKIA{}", r.text(B32, 16));
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
            r.text(HEX, 8),
            r.text(HEX, 4),
            r.text(HEX, 3),
            r.text(HEX, 3),
            r.text(HEX, 12)
        ));
        v.push(format!("commit {}", r.text(HEX, 40)));
        v.push(format!("sha256:{}", r.text(HEX, 64)));
        v.push(format!("Merge: {} {}", r.text(HEX, 7), r.text(HEX, 7)));
        v.push(format!("data:image/png;base64,{}", r.text(B64, 3000)));
        v.push(format!("{}==", r.text(B64, 1022)));
        v.push(format!("msg_01{}", r.text(ALNUM, 22)));
        v.push(format!("toolu_01{}", r.text(ALNUM, 22)));
        v.push(format!("chatcmpl-{}", r.text(ALNUM, 29)));
        v.push(format!("resp_{}", r.text(HEX, 48)));
        v.push(format!("/tmp/{}", r.text(ALNUM, 40)));
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
    let key = format!("AKIA{}", r.text(B32, 16));
    // Credential-shaped text in every field that must reach its reader unchanged.
    let line = format!(
        r#"{{"type":"message","id":"{key}","parentId":"{token}","timestamp":"t","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"ok","thinkingSignature":"{token}"}},{{"type":"text","text":"hi","textSignature":"{key}"}},{{"type":"reasoning","encrypted_content":"{token}"}},{{"type":"image","data":"{}{key}","mimeType":"image/png"}}],"responseId":"{token}"}}}}"#,
        r.text(B64, 200)
    );
    let scan = scan_session(format!("{HEADER}\n{line}\n").as_bytes());
    assert!(scan.findings.is_empty(), "{:?}", scan.findings);
    assert!(redact_line(&line).is_none());
}

#[test]
fn keywords_in_any_casing_are_found_in_a_session() {
    // The assignment rule ignores case; the prefilter on the raw bytes must too, or the
    // line is never decoded.
    let mut r = Rng(2026);
    for key in [
        "PASSWORD=",
        "Secret: ",
        "Api_Key = ",
        "PassPhrase=",
        "ACCESS-Key: ",
        "Auth_Token=",
        "DB_PassWord=",
    ] {
        let value = format!("{}7{}", r.text(ALNUM, 11), r.text(ALNUM, 6));
        let text = format!("the config says {key}{value} and more");
        assert!(
            find(&text).iter().any(|f| f.kind == "secret-assignment"),
            "the rules do not find {text:?}"
        );
        for (line, path) in fields(&text) {
            let scan = scan_session(format!("{HEADER}\n{line}\n").as_bytes());
            assert!(
                scan.findings
                    .iter()
                    .any(|f| f.kind == "secret-assignment" && f.field == path && f.line == 2),
                "{key:?} in {path}: {:?}",
                scan.findings
            );
        }
    }
}

#[test]
fn aws_secret_keys_in_every_spelling_the_rule_allows() {
    let mut r = Rng(41);
    for key in [
        "SECRET_ACCESSKEY",
        "aws_secretaccess_key",
        "AWSSECRET_KEY",
        "aws_secret_access_key",
    ] {
        let s = r.text(B64, 40);
        let text = format!("{key} = {s}\n");
        let found = find(&text);
        assert!(
            found.iter().any(|f| f.kind == "aws-secret-key"),
            "{text:?}: {found:?}"
        );
    }
}
