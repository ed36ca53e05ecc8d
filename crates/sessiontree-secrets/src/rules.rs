//! The rules: what each kind of credential looks like, the literals every match of it
//! contains (the prefilter's anchors), and how a match is checked before it is reported.
//!
//! Patterns follow the providers' documented token formats (and the public rule sets that
//! collect them); a match only becomes a finding after its check: entropy, a checksum, a
//! decodable header, a context word, or a placeholder test.

use crate::check;
use std::ops::Range;

/// How a match is checked. Each returns the kind to report and the range of the secret
/// (what a redaction replaces), or `None` for a look-alike.
#[derive(Clone, Copy)]
pub(crate) enum Check {
    /// The secret group has at least this many bits of entropy per character.
    Entropy(f64),
    /// A PEM or OpenSSH private key block: from the BEGIN line to its END line.
    PemBlock,
    /// AWS access key id: base32 body, not the documentation's example.
    AwsKeyId,
    /// AWS secret key: 40 characters of high entropy, not the documentation's example.
    AwsSecret,
    /// GitHub's `ghX_` tokens: the last six characters are the base62 CRC32 of the rest.
    GithubChecksum,
    /// Slack tokens: digits and entropy; the kind by the letter after `xox`.
    Slack,
    /// Google API keys: `gcp-api-key`, or `google-ai-key` when the text around names
    /// Gemini or the Generative Language API.
    Google,
    /// Hugging Face: mixed case and entropy.
    HuggingFace,
    /// Azure SAS token: a `sig=` with the `sv=` version and expiry or permissions nearby.
    AzureSas,
    /// JWT: the header decodes to a JSON object naming a signing algorithm.
    Jwt,
    /// `scheme://user:password@host`: the password, unless it is a placeholder.
    UrlPassword,
    /// `password=`, `secret:`, `api_key = "..."`: a high-entropy value that is not code.
    Assignment,
}

/// One rule.
pub(crate) struct Rule {
    /// The kind reported (several rules may share one).
    pub kind: &'static str,
    /// Literals (ASCII case-insensitive) of which every match contains at least one.
    pub anchors: &'static [&'static str],
    pub pattern: &'static str,
    /// The capture group that is the secret (0: the whole match).
    pub group: usize,
    pub check: Check,
}

/// What is detected, in priority order: where two findings overlap, the earlier rule's
/// wins (a GitHub token inside `GITHUB_TOKEN=...` is a `github-token`, not an assignment).
pub(crate) const RULES: &[Rule] = &[
    Rule {
        kind: "private-key",
        anchors: &["PRIVATE KEY"],
        pattern: r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----",
        group: 0,
        check: Check::PemBlock,
    },
    Rule {
        kind: "gcp-service-account",
        anchors: &["private_key_id"],
        pattern: r#"\\?"private_key_id\\?"\s*:\s*\\?"([0-9a-f]{40})\\?""#,
        group: 1,
        check: Check::Entropy(3.0),
    },
    Rule {
        kind: "aws-access-key",
        anchors: &["AKIA", "ASIA", "ABIA", "ACCA"],
        pattern: r"\b((?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
        group: 1,
        check: Check::AwsKeyId,
    },
    Rule {
        kind: "aws-secret-key",
        // Every spelling the pattern allows (`secret_accesskey`, `awssecret_key`) holds one.
        anchors: &["secret_access", "secretaccess", "secret_key", "secretkey"],
        pattern: r#"(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret_?key)\\?["']?\s{0,4}(?:=>|=|:)\s{0,4}\\?["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        group: 1,
        check: Check::AwsSecret,
    },
    Rule {
        kind: "github-token",
        anchors: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        pattern: r"\b(gh[pousr]_[A-Za-z0-9]{36})\b",
        group: 1,
        check: Check::GithubChecksum,
    },
    Rule {
        kind: "github-token",
        anchors: &["github_pat_"],
        pattern: r"\b(github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b",
        group: 1,
        check: Check::Entropy(4.0),
    },
    Rule {
        kind: "gitlab-token",
        anchors: &[
            "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glsoat-", "glffct-",
            "glimt-", "glagent-", "glft-",
        ],
        pattern: r"\b((?:glpat|gldt|glrt|glptt|glcbt|gloas|glsoat|glffct|glimt|glagent|glft)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+){0,3})",
        group: 1,
        check: Check::Entropy(3.5),
    },
    Rule {
        kind: "gitlab-token",
        anchors: &["GR1348941"],
        pattern: r"\b(GR1348941[A-Za-z0-9_-]{20,})",
        group: 1,
        check: Check::Entropy(3.5),
    },
    Rule {
        kind: "slack-token",
        anchors: &[
            "xoxb-", "xoxp-", "xoxa-", "xoxe-", "xoxr-", "xoxs-", "xoxc-", "xoxo-",
        ],
        pattern: r"\b(xox[bpaersco](?:\.xox[bpaersco])?-[0-9A-Za-z-]{10,250})",
        group: 1,
        check: Check::Slack,
    },
    Rule {
        kind: "slack-token",
        anchors: &["xapp-"],
        pattern: r"\b(xapp-\d-[A-Z0-9]{6,}-\d{6,}-[a-z0-9]{20,})",
        group: 1,
        check: Check::Slack,
    },
    Rule {
        kind: "slack-webhook",
        anchors: &["hooks.slack.com"],
        pattern: r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})",
        group: 1,
        check: Check::Entropy(3.5),
    },
    Rule {
        kind: "stripe-live-key",
        anchors: &["sk_live_", "rk_live_"],
        pattern: r"\b((?:sk|rk)_live_[A-Za-z0-9]{20,247})\b",
        group: 1,
        check: Check::Entropy(3.5),
    },
    Rule {
        kind: "anthropic-key",
        anchors: &["sk-ant-"],
        pattern: r"\b(sk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{80,})",
        group: 1,
        check: Check::Entropy(4.0),
    },
    Rule {
        kind: "openai-key",
        anchors: &["T3BlbkFJ"],
        pattern: r"\b(sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{16,}T3BlbkFJ[A-Za-z0-9_-]{16,})",
        group: 1,
        check: Check::Entropy(4.0),
    },
    Rule {
        kind: "openai-key",
        anchors: &["sk-proj-", "sk-svcacct-", "sk-admin-"],
        pattern: r"\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,})",
        group: 1,
        check: Check::Entropy(4.0),
    },
    Rule {
        kind: "gcp-api-key",
        anchors: &["AIza"],
        pattern: r"\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
        group: 1,
        check: Check::Google,
    },
    Rule {
        kind: "huggingface-token",
        anchors: &["hf_", "api_org_"],
        pattern: r"\b((?:hf_|api_org_)[A-Za-z0-9]{34,40})\b",
        group: 1,
        check: Check::HuggingFace,
    },
    Rule {
        kind: "npm-token",
        anchors: &["npm_"],
        pattern: r"\b(npm_[A-Za-z0-9]{36})\b",
        group: 1,
        check: Check::Entropy(4.0),
    },
    Rule {
        kind: "pypi-token",
        anchors: &["pypi-AgE"],
        pattern: r"\b(pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,})",
        group: 1,
        check: Check::Entropy(4.0),
    },
    Rule {
        kind: "azure-connection-string",
        anchors: &["accountkey", "sharedaccesskey"],
        pattern: r"(?i)\b(?:AccountKey|SharedAccessKey)\s{0,2}=\s{0,2}([A-Za-z0-9+/]{40,}={0,2})",
        group: 1,
        check: Check::Entropy(4.0),
    },
    Rule {
        kind: "azure-sas-token",
        anchors: &["sig="],
        pattern: r"(?i)[?&;]sig=([A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})",
        group: 1,
        check: Check::AzureSas,
    },
    Rule {
        kind: "jwt",
        anchors: &["eyJ"],
        pattern: r"\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,})",
        group: 1,
        check: Check::Jwt,
    },
    Rule {
        kind: "url-password",
        anchors: &["://"],
        pattern: r#"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://([^\s:/?#@"'<>\\\[\]]{1,128}):([^\s/?#@"'<>\\]{1,256})@[A-Za-z0-9\[]"#,
        group: 2,
        check: Check::UrlPassword,
    },
    Rule {
        kind: "secret-assignment",
        anchors: &[
            "passw",
            "passphrase",
            "secret",
            "api_key",
            "api-key",
            "apikey",
            "access_key",
            "access-key",
            "accesskey",
            "_token",
            "-token",
            "token=",
            "token:",
            "token\"",
            "token'",
            "token =",
        ],
        pattern: r#"(?i)(?:^|[^A-Za-z0-9])([A-Za-z0-9_.-]{0,40}(?:password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|token)[A-Za-z0-9_-]{0,20})\\?["']?\s{0,4}(?::=|=>|=|:)\s{0,4}\\?["']?([^\s"'`,;<>(){}\[\]\\]{8,256})"#,
        group: 2,
        check: Check::Assignment,
    },
];

/// Runs a rule's check on one match: the kind and the secret's range, or `None`.
pub(crate) fn accept(
    rule: &Rule,
    text: &str,
    whole: Range<usize>,
    secret: Range<usize>,
    caps: &regex::Captures<'_>,
) -> Option<(&'static str, Range<usize>)> {
    let s = &text[secret.clone()];
    let kind = rule.kind;
    match rule.check {
        Check::Entropy(min) => (check::entropy(s) >= min).then_some((kind, secret)),
        Check::PemBlock => check::pem_block(text, whole).map(|r| (kind, r)),
        Check::AwsKeyId => {
            (!s.contains("EXAMPLE") && check::entropy(&s[4..]) >= 3.0).then_some((kind, secret))
        }
        Check::AwsSecret => {
            (!s.contains("EXAMPLE") && check::entropy(s) >= 4.0).then_some((kind, secret))
        }
        Check::GithubChecksum => check::github_checksum(s).then_some((kind, secret)),
        Check::Slack => {
            let body = &s[5..];
            let kind = match s.as_bytes()[3] {
                b'b' if s.starts_with("xoxb") => "slack-bot-token",
                b'p' if s.starts_with("xoxp") => "slack-user-token",
                _ => kind,
            };
            (body.bytes().any(|b| b.is_ascii_digit())
                && check::entropy(body) >= 3.0
                && !check::placeholder(body))
            .then_some((kind, secret))
        }
        Check::Google => {
            if check::entropy(&s[4..]) < 3.5 || check::placeholder(s) {
                return None;
            }
            let from = check::floor(text, secret.start.saturating_sub(200));
            let before = text[from..secret.start].to_ascii_lowercase();
            let ai = [
                "gemini",
                "generativelanguage",
                "google_ai",
                "googleai",
                "genai",
                "aistudio",
            ]
            .iter()
            .any(|w| before.contains(w));
            Some((if ai { "google-ai-key" } else { kind }, secret))
        }
        Check::HuggingFace => (s.bytes().any(|b| b.is_ascii_uppercase())
            && s.bytes().any(|b| b.is_ascii_lowercase())
            && check::entropy(s) >= 4.0)
            .then_some((kind, secret)),
        Check::AzureSas => {
            let from = check::floor(text, whole.start.saturating_sub(600));
            let near = text[from..whole.start].to_ascii_lowercase();
            (near.contains("sv=")
                && (near.contains("se=") || near.contains("sp="))
                && check::entropy(s) >= 3.5)
                .then_some((kind, secret))
        }
        Check::Jwt => check::jwt(s).then_some((kind, secret)),
        Check::UrlPassword => {
            let user = caps.get(1).map_or("", |m| m.as_str());
            check::url_password(user, s).then_some((kind, secret))
        }
        Check::Assignment => {
            let after = text[secret.end..].chars().next();
            check::assigned_value(s, after).then_some((kind, secret))
        }
    }
}
