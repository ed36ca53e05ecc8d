//! Entries and the header, kept as their original bytes plus the few fields that the tree
//! and the context rules need. Everything else is read on demand from the bytes, so unknown
//! fields and unknown entry types survive untouched.

use crate::json::{self, decode_string, Member, Raw};
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// Bytes that entries point into: a whole file read or mapped at once, or one line.
pub trait Buffer: AsRef<[u8]> + Send + Sync {
    /// The range has been scanned: its memory may be given back (a mapped file drops the
    /// pages; they are read again from the page cache if touched later).
    fn release(&self, _range: Range<usize>) {}

    /// Reads the bytes at `at..at + dst.len()` into `dst` when that costs less than reading
    /// them in place, and says whether it did. A mapped file does: a read copies from the
    /// page cache into memory the scan reads while it is still cached, where a scan of the
    /// map would map every page and then drop it again.
    fn read_at(&self, _at: usize, _dst: &mut [u8]) -> bool {
        false
    }

    /// The scan is over: what only it needed may go (a mapped file closes the file it read
    /// its copies from).
    fn scanned(&self) {}
}

impl Buffer for Vec<u8> {}

/// A shared buffer.
pub type Backing = Arc<dyn Buffer>;

/// One line's text inside a shared backing buffer.
#[derive(Clone)]
pub struct Text {
    buf: Backing,
    range: Range<usize>,
}

impl Text {
    /// The text at `range` of `buf` (which must be UTF-8 there).
    pub fn new(buf: Backing, range: Range<usize>) -> Self {
        Text { buf, range }
    }

    /// A line made in memory, in its own buffer.
    pub fn owned(s: String) -> Self {
        let len = s.len();
        Text {
            buf: Arc::new(s.into_bytes()),
            range: 0..len,
        }
    }

    /// The line's bytes, without its `\n`.
    pub fn as_bytes(&self) -> &[u8] {
        &(*self.buf).as_ref()[self.range.clone()]
    }

    /// The line as text (loading guarantees UTF-8).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// The entry types of format version 3, and any other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryType {
    /// `message`: one message (`message.role` says which kind).
    Message,
    /// `thinking_level_change`: the thinking level from here on.
    ThinkingLevelChange,
    /// `model_change`: the model from here on.
    ModelChange,
    /// `compaction`: older history replaced by a summary.
    Compaction,
    /// `branch_summary`: a summary of an abandoned branch.
    BranchSummary,
    /// `custom`: extension state, never in the model's context.
    Custom,
    /// `custom_message`: an extension's message, in the context.
    CustomMessage,
    /// `label`: a bookmark on `targetId` (absent or empty `label`: cleared).
    Label,
    /// `session_info`: the session's display `name`.
    SessionInfo,
    /// `usage`: spend outside a message (a cache warm-up, say); no context.
    Usage,
    /// `context_edit`: replaces or drops `targetId`'s content in the context.
    ContextEdit,
    /// A type this version does not know (kept verbatim).
    Other(Box<str>),
    /// No `type`, or one that is not a string.
    Untyped,
}

impl EntryType {
    /// The type a `type` string names ([`EntryType::Other`] for one this version does not know).
    pub fn from_name(s: &str) -> EntryType {
        match s {
            "message" => EntryType::Message,
            "thinking_level_change" => EntryType::ThinkingLevelChange,
            "model_change" => EntryType::ModelChange,
            "compaction" => EntryType::Compaction,
            "branch_summary" => EntryType::BranchSummary,
            "custom" => EntryType::Custom,
            "custom_message" => EntryType::CustomMessage,
            "label" => EntryType::Label,
            "session_info" => EntryType::SessionInfo,
            "usage" => EntryType::Usage,
            "context_edit" => EntryType::ContextEdit,
            other => EntryType::Other(other.into()),
        }
    }

    /// The `type` string (empty for [`EntryType::Untyped`]).
    pub fn name(&self) -> &str {
        match self {
            EntryType::Message => "message",
            EntryType::ThinkingLevelChange => "thinking_level_change",
            EntryType::ModelChange => "model_change",
            EntryType::Compaction => "compaction",
            EntryType::BranchSummary => "branch_summary",
            EntryType::Custom => "custom",
            EntryType::CustomMessage => "custom_message",
            EntryType::Label => "label",
            EntryType::SessionInfo => "session_info",
            EntryType::Usage => "usage",
            EntryType::ContextEdit => "context_edit",
            EntryType::Other(s) => s,
            EntryType::Untyped => "",
        }
    }
}

/// An entry's `parentId`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parent {
    /// `null`: a root.
    Null,
    /// A string (possibly naming no entry: an orphan).
    Id(Box<str>),
    /// Absent, or a value that is neither null nor a string.
    Invalid,
}

impl Parent {
    /// The parent id the walk follows (JavaScript: a truthy `parentId`).
    pub fn walk_id(&self) -> Option<&str> {
        match self {
            Parent::Id(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }
}

/// One entry line.
#[derive(Clone)]
pub struct Entry {
    text: Text,
    /// 1-based line number in the file it was read from (0 for entries made in memory).
    pub line: u64,
    /// Byte offset of the line in that file.
    pub offset: u64,
    /// Position among the file's parsed values (header = 0), as the reference counts them.
    pub(crate) ordinal: u32,
    /// `type`.
    pub entry_type: EntryType,
    /// `id`, when it is a string (entries without one stay out of the tree index).
    pub id: Option<Box<str>>,
    /// `parentId`.
    pub parent: Parent,
    /// `message.role`, for message entries.
    pub role: Option<Box<str>>,
    /// Where the fields the library reads are, found while the line was being scanned, so
    /// that reading them later never touches the line's bytes (a mapped session's pages
    /// may have been given back).
    known: Box<KnownFields>,
}

/// Top-level keys whose member is looked up once, at load.
const TOP_KEYS: [&str; 22] = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "message",
    "summary",
    "firstKeptEntryId",
    "targetId",
    "content",
    "tokensBefore",
    "thinkingLevel",
    "systemMessage",
    "replacement",
    "provider",
    "modelId",
    "label",
    "fromId",
    "display",
    "details",
    "customType",
    "name",
    "data",
];

/// Keys of `message` looked up once, at load.
const MESSAGE_KEYS: [&str; 8] = [
    "role",
    "content",
    "provider",
    "model",
    "toolName",
    "toolCallId",
    "stopReason",
    "errorMessage",
];

/// For each known key, where the value of its last member is in the line (`start..end`;
/// an empty span: absent), and the first byte of that value (which tells its kind). Other
/// keys are found by scanning the line again (rare: the library asks for known keys).
#[derive(Clone, Default)]
struct KnownFields {
    top: [(u32, u32); TOP_KEYS.len()],
    message: [(u32, u32); MESSAGE_KEYS.len()],
    top_first: [u8; TOP_KEYS.len()],
    message_first: [u8; MESSAGE_KEYS.len()],
    /// Copies of short top-level values of entries other than messages (labels,
    /// compactions, edits, names...), read by the index and the projection after the load:
    /// read from here, the mapped line is never touched again (a touch maps the page back,
    /// and the kernel may map a whole 2 MiB folio with it).
    small: Box<[u8]>,
    /// Bit `s`: the value of top-level key `s` is the span `top[s]` of `small`.
    in_small: u32,
}

/// Values up to this many bytes are copied into [`KnownFields::small`].
const SMALL_VALUE: usize = 256;

/// Where `key` is in `keys`, compared as bytes (a key read from a line needs no UTF-8
/// check to be matched against these ASCII names).
fn slot_of(keys: &[&str], key: impl AsRef<[u8]>) -> Option<usize> {
    keys.iter().position(|k| k.as_bytes() == key.as_ref())
}

/// Fills `spans` with the value of the last member of each key in `keys` (keys are read
/// from `text`).
fn find_known<'m>(
    text: &[u8],
    members: impl IntoIterator<Item = &'m Member>,
    keys: &[&str],
    spans: &mut [(u32, u32)],
    first: &mut [u8],
) {
    for m in members {
        let lit = &text[m.key.clone()];
        let inner = &lit[1..lit.len() - 1];
        let slot = if inner.contains(&b'\\') {
            slot_of(keys, decode_string(lit).as_bytes())
        } else {
            slot_of(keys, inner)
        };
        if let Some(s) = slot {
            spans[s] = (m.value.start as u32, m.value.end as u32);
            first[s] = text[m.value.start];
        }
    }
}

/// The members of the object that is the value of top-level member `parent`.
fn members_of(
    inner: &[(u32, Member)],
    parent: usize,
) -> impl DoubleEndedIterator<Item = &Member> + Clone {
    inner
        .iter()
        .filter(move |(p, _)| *p as usize == parent)
        .map(|(_, m)| m)
}

fn span_of(span: (u32, u32)) -> Option<Range<usize>> {
    (span.1 > span.0).then_some(span.0 as usize..span.1 as usize)
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("line", &self.line)
            .field("text", &self.text)
            .finish()
    }
}

/// True when the key literal (with quotes) spells `key`.
#[inline]
pub(crate) fn key_is(lit: &[u8], key: &str) -> bool {
    let inner = &lit[1..lit.len() - 1];
    if inner == key.as_bytes() {
        return true;
    }
    // Only a key with escapes can spell the same name in other bytes.
    inner.contains(&b'\\') && decode_string(lit) == key
}

fn last<'a, 'm>(
    text: &'a [u8],
    members: impl DoubleEndedIterator<Item = &'m Member>,
    key: &str,
) -> Option<Raw<'a>> {
    members
        .rev()
        .find(|m| key_is(&text[m.key.clone()], key))
        .map(|m| Raw::new_unchecked(&text[m.value.clone()]))
}

impl Entry {
    /// Builds an entry from one scanned object line.
    pub(crate) fn from_scanned(
        text: Text,
        scanned: &json::Scanned,
        line: u64,
        offset: u64,
    ) -> Entry {
        Entry::from_scanned_in(text, None, scanned, line, offset)
    }

    /// [`Entry::from_scanned`], its fields read from `copy` when given: the same bytes as
    /// the text's, read elsewhere (the load scans a copy of a mapped file's lines, so that
    /// the scan never maps the file's pages).
    pub(crate) fn from_scanned_in(
        text: Text,
        copy: Option<&[u8]>,
        scanned: &json::Scanned,
        line: u64,
        offset: u64,
    ) -> Entry {
        let bytes = match copy {
            Some(b) => b,
            None => text.as_bytes(),
        };
        let members = &scanned.members;
        let mut known = Box::<KnownFields>::default();
        // Spans are kept as u32: a line of 4 GiB or more keeps none (its fields are then
        // found by scanning it again).
        let fits = bytes.len() <= u32::MAX as usize;
        let k = &mut *known;
        if fits {
            find_known(
                bytes,
                members.iter(),
                &TOP_KEYS,
                &mut k.top,
                &mut k.top_first,
            );
        }
        let top = |k: &KnownFields, key: &str| {
            span_of(k.top[slot_of(&TOP_KEYS, key).expect("a known key")])
                .map(|r| Raw::new_unchecked(&bytes[r]))
        };
        let entry_type = match top(k, "type").and_then(|t| t.as_str()) {
            Some(t) => EntryType::from_name(&t),
            None => EntryType::Untyped,
        };
        let id = top(k, "id")
            .and_then(|v| v.as_str())
            .map(|s| s.into_owned().into_boxed_str());
        let parent = match top(k, "parentId") {
            Some(v) if v.is_null() => Parent::Null,
            Some(v) => match v.as_str() {
                Some(s) => Parent::Id(s.into_owned().into_boxed_str()),
                None => Parent::Invalid,
            },
            None => Parent::Invalid,
        };
        // Members of `message` (the last `message` member, as JavaScript keeps).
        if fits {
            let msg = span_of(k.top[slot_of(&TOP_KEYS, "message").expect("a known key")]);
            let msg_index =
                msg.and_then(|r| members.iter().rposition(|m| m.value.start == r.start));
            if let Some(i) = msg_index {
                let inner = members_of(&scanned.inner, i);
                find_known(
                    bytes,
                    inner,
                    &MESSAGE_KEYS,
                    &mut k.message,
                    &mut k.message_first,
                );
            }
        }
        if entry_type != EntryType::Message {
            let mut small = Vec::new();
            for slot in 0..TOP_KEYS.len() {
                let Some(r) = span_of(k.top[slot]) else {
                    continue;
                };
                if r.len() <= SMALL_VALUE {
                    k.top[slot] = (small.len() as u32, (small.len() + r.len()) as u32);
                    k.in_small |= 1 << slot;
                    small.extend_from_slice(&bytes[r]);
                }
            }
            k.small = small.into_boxed_slice();
        }
        let role = if entry_type == EntryType::Message {
            span_of(k.message[0])
                .map(|r| Raw::new_unchecked(&bytes[r]))
                .and_then(|r| r.as_str())
                .map(|s| s.into_owned().into_boxed_str())
        } else {
            None
        };
        Entry {
            id,
            parent,
            entry_type,
            role,
            known,
            text,
            line,
            offset,
            ordinal: 0,
        }
    }

    /// The line's top-level members, found by scanning it again (for keys the load did not
    /// record).
    fn rescan(&self) -> json::Scanned {
        json::scan::scan(self.text.as_bytes()).unwrap_or_default()
    }

    /// Parses one line of JSON text into an entry (for lines made in memory).
    pub fn parse(s: String) -> Result<Entry, json::ScanError> {
        let scanned = json::scan::scan(s.as_bytes())?;
        Ok(Entry::from_scanned(Text::owned(s), &scanned, 0, 0))
    }

    /// Parses one line ending in `\n` (kept in the same buffer, so it can be written as is).
    pub fn parse_line(mut s: String) -> Result<Entry, json::ScanError> {
        if !s.ends_with('\n') {
            s.push('\n');
        }
        let len = s.len() - 1;
        let scanned = json::scan::scan(&s.as_bytes()[..len])?;
        let text = Text {
            buf: Arc::new(s.into_bytes()),
            range: 0..len,
        };
        Ok(Entry::from_scanned(text, &scanned, 0, 0))
    }

    /// Where the entry's line is in the file it was read from, without its `\n`, when its
    /// text is those very bytes (`None` for a line with bytes that are not UTF-8, read as
    /// U+FFFD, and for entries made in memory).
    #[doc(hidden)] // plumbing between the core and the store
    pub fn span_in_file(&self) -> Option<Range<u64>> {
        let r = &self.text.range;
        (self.line != 0 && r.start as u64 == self.offset)
            .then(|| self.offset..self.offset + (r.end - r.start) as u64)
    }

    /// Position among the file's parsed values (header = 0), as the reference counts them.
    #[doc(hidden)] // plumbing between the core and the store
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The line with its `\n`, when the buffer holds it right after the text.
    pub fn line_bytes(&self) -> Option<&[u8]> {
        let all: &[u8] = (*self.text.buf).as_ref();
        let r = &self.text.range;
        (all.get(r.end) == Some(&b'\n')).then(|| &all[r.start..r.end + 1])
    }

    /// The entry's line, exactly as stored.
    pub fn text(&self) -> &str {
        self.text.as_str()
    }

    /// The whole entry as a JSON value.
    pub fn raw(&self) -> Raw<'_> {
        let b = self.text.as_bytes();
        let start = b
            .iter()
            .position(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
            .unwrap_or(0);
        let end = b.len()
            - b.iter()
                .rev()
                .position(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
                .unwrap_or(0);
        Raw::new_unchecked(&b[start..end])
    }

    /// A top-level field (the last occurrence, as JavaScript keeps).
    pub fn field(&self, key: &str) -> Option<Raw<'_>> {
        let fits = self.text.range.len() <= u32::MAX as usize;
        match slot_of(&TOP_KEYS, key) {
            Some(s) if fits => {
                let r = span_of(self.known.top[s])?;
                Some(Raw::new_unchecked(if self.known.in_small & (1 << s) != 0 {
                    &self.known.small[r]
                } else {
                    &self.text.as_bytes()[r]
                }))
            }
            _ => last(self.text.as_bytes(), self.rescan().members.iter(), key),
        }
    }

    /// The kind of a top-level field's value, without reading the line when the key is one
    /// the library knows.
    pub(crate) fn field_kind(&self, key: &str) -> Option<json::Kind> {
        match slot_of(&TOP_KEYS, key) {
            Some(s) if self.text.range.len() <= u32::MAX as usize => span_of(self.known.top[s])
                .map(|_| json::Kind::of_first_byte(self.known.top_first[s])),
            _ => self.field(key).map(|v| v.kind()),
        }
    }

    /// The kind of a field of `message` (as [`Entry::field_kind`]).
    pub(crate) fn message_field_kind(&self, key: &str) -> Option<json::Kind> {
        match slot_of(&MESSAGE_KEYS, key) {
            Some(s) if self.text.range.len() <= u32::MAX as usize => span_of(self.known.message[s])
                .map(|_| json::Kind::of_first_byte(self.known.message_first[s])),
            _ => self.message_field(key).map(|v| v.kind()),
        }
    }

    /// A string field, decoded.
    pub fn str_field(&self, key: &str) -> Option<Cow<'_, str>> {
        self.field(key).and_then(|v| v.as_str())
    }

    /// `message`, for message entries.
    pub fn message(&self) -> Option<Raw<'_>> {
        self.field("message")
    }

    /// A field of `message`.
    pub fn message_field(&self, key: &str) -> Option<Raw<'_>> {
        match slot_of(&MESSAGE_KEYS, key) {
            Some(s) if self.text.range.len() <= u32::MAX as usize => {
                span_of(self.known.message[s]).map(|r| Raw::new_unchecked(&self.text.as_bytes()[r]))
            }
            _ => {
                let b = self.text.as_bytes();
                let sc = self.rescan();
                let i = sc
                    .members
                    .iter()
                    .rposition(|m| key_is(&b[m.key.clone()], "message"))?;
                last(b, members_of(&sc.inner, i), key)
            }
        }
    }

    /// `id`, when it is a string.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// `message.role`, for a message entry with a string role.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// True for a message entry whose message has this role.
    pub fn is_role(&self, role: &str) -> bool {
        self.entry_type == EntryType::Message && self.role() == Some(role)
    }

    /// `timestamp`, as stored.
    pub fn timestamp(&self) -> Option<Raw<'_>> {
        self.field("timestamp")
    }
}

/// The session format version sessiontree writes (and Pi 1.6.0 writes).
pub const CURRENT_VERSION: u32 = 3;

/// The header line (`type: "session"`).
#[derive(Clone, Debug)]
pub struct Header {
    text: Text,
    /// 1-based line number in the file (1 unless lines before the header were skipped).
    pub line: u64,
    /// The session id (`id`).
    pub id: String,
    members: Box<[Member]>,
}

impl Header {
    /// The header an object line makes, if it is a valid one.
    pub fn from_entry(e: &Entry) -> Option<Header> {
        let scanned = e.rescan();
        Header::from_scanned(e.text.clone(), &scanned, e.line)
    }

    /// A header from a scanned line, if it is a valid one (`type == "session"`, string `id`).
    pub(crate) fn from_scanned(text: Text, scanned: &json::Scanned, line: u64) -> Option<Header> {
        let b = text.as_bytes();
        if last(b, scanned.members.iter(), "type")?.as_str()? != "session" {
            return None;
        }
        let id = last(b, scanned.members.iter(), "id")?
            .as_str()?
            .into_owned();
        Some(Header {
            id,
            line,
            members: scanned.members.clone().into_boxed_slice(),
            text,
        })
    }

    /// Parses one line of JSON text; `None` unless it is a valid header.
    pub fn parse(s: String) -> Option<Header> {
        let scanned = json::scan::scan(s.as_bytes()).ok()?;
        Header::from_scanned(Text::owned(s), &scanned, 1)
    }

    /// The header line, exactly as stored.
    pub fn text(&self) -> &str {
        self.text.as_str()
    }

    /// The whole header as a JSON value.
    pub fn raw(&self) -> Raw<'_> {
        Raw::new_unchecked(
            self.text()
                .trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'))
                .as_bytes(),
        )
    }

    /// A field of the header (the last occurrence, as JavaScript keeps), known or not:
    /// `provider`, `modelId`, `thinkingLevel`, `branchedFrom` of old files survive.
    pub fn field(&self, key: &str) -> Option<Raw<'_>> {
        last(self.text.as_bytes(), self.members.iter(), key)
    }

    /// `version` as JavaScript compares it (`header.version ?? 1`); `None` when not a number.
    pub fn version(&self) -> Option<f64> {
        match self.field("version") {
            None => Some(1.0),
            Some(v) if v.is_null() => Some(1.0),
            Some(v) => match v.kind() {
                json::Kind::Number => v.as_f64(),
                json::Kind::String => v.as_str().and_then(|s| {
                    let t = s.trim();
                    if t.is_empty() {
                        Some(0.0)
                    } else {
                        t.parse::<f64>().ok()
                    }
                }),
                json::Kind::True => Some(1.0),
                json::Kind::False => Some(0.0),
                _ => None,
            },
        }
    }

    /// `cwd`, when it is a string: the working directory the session belongs to.
    pub fn cwd(&self) -> Option<String> {
        self.field("cwd")
            .and_then(|v| v.as_str())
            .map(Cow::into_owned)
    }

    /// `parentSession`, when it is a string: the file this session was branched or forked
    /// from.
    pub fn parent_session(&self) -> Option<String> {
        self.field("parentSession")
            .and_then(|v| v.as_str())
            .map(Cow::into_owned)
    }

    /// `timestamp`, as stored (an ISO time in every file Pi writes).
    pub fn timestamp(&self) -> Option<Raw<'_>> {
        self.field("timestamp")
    }
}

/// JavaScript's `String.prototype.trim`.
pub fn js_trim(s: &str) -> &str {
    fn ws(c: char) -> bool {
        matches!(
            c,
            '\u{9}'
                | '\u{a}'
                | '\u{b}'
                | '\u{c}'
                | '\u{d}'
                | ' '
                | '\u{a0}'
                | '\u{1680}'
                | '\u{2000}'
                ..='\u{200a}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202f}'
                    | '\u{205f}'
                    | '\u{3000}'
                    | '\u{feff}'
        )
    }
    s.trim_matches(ws)
}

/// Gives a buffer's bytes back behind a cursor that moves forward through it, in steps of a
/// MiB, while entries are streamed out in (mostly) file order. Giving back too much is never
/// wrong: dropped pages of a mapped file are read again if touched.
#[derive(Default)]
pub struct Releaser {
    next: usize,
}

impl Releaser {
    /// A releaser at the start of the buffer.
    pub fn new() -> Self {
        Releaser::default()
    }

    /// `e` was written out: the bytes before its end are not needed any more. Released
    /// in steps of at least a MiB (a system call per entry would cost more than it saves).
    pub fn passed(&mut self, e: &Entry) {
        let end = e.text.range.end;
        if end >= self.next + (1 << 20) {
            e.text.buf.release(self.next..end);
            self.next = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Kind;

    #[test]
    fn known_fields_follow_escaped_and_duplicate_keys() {
        // `\u0074ype` spells "type"; the last `id` and `message` win, as in JavaScript.
        let e = Entry::parse(
            r#"{"\u0074ype":"message","id":"a","id":"b","parentId":null,"message":{"role":"user"},"message":{"r\u006fle":"assistant","content":null,"provider":"p"}}"#
                .to_string(),
        )
        .expect("valid");
        assert_eq!(e.entry_type, EntryType::Message);
        assert_eq!(e.id(), Some("b"));
        assert_eq!(e.role(), Some("assistant"));
        assert_eq!(e.message_field_kind("content"), Some(Kind::Null));
        assert_eq!(e.message_field("provider").map(|v| v.text()), Some("\"p\""));
        assert_eq!(e.field_kind("message"), Some(Kind::Object));
        assert_eq!(e.field_kind("summary"), None);
        // Keys outside the known set are found by reading the line.
        assert_eq!(e.field("parentId").map(|v| v.is_null()), Some(true));
        let odd = Entry::parse(r#"{"type":"x","id":"c","extra":[1],"extra":2}"#.to_string())
            .expect("valid");
        assert_eq!(odd.field("extra").map(|v| v.text()), Some("2"));
        assert_eq!(odd.field_kind("extra"), Some(Kind::Number));
        // Short values of other entries are read from their copies: same answers.
        let big = format!("\"{}\"", "x".repeat(SMALL_VALUE + 10));
        let label = Entry::parse(format!(
            r#"{{"type":"label","id":"l1","targetId":"a","targetId":"t\u00e9","label":{big},"timestamp":"2025-01-01T00:00:00.000Z","summary":null}}"#
        ))
        .expect("valid");
        assert!(label.known.in_small & (1 << slot_of(&TOP_KEYS, "targetId").unwrap()) != 0);
        assert!(label.known.in_small & (1 << slot_of(&TOP_KEYS, "label").unwrap()) == 0);
        assert_eq!(label.str_field("targetId").as_deref(), Some("té"));
        assert_eq!(label.field("label").map(|v| v.text()), Some(big.as_str()));
        assert_eq!(
            label.timestamp().map(|v| v.text()),
            Some("\"2025-01-01T00:00:00.000Z\"")
        );
        assert_eq!(label.field("summary").map(|v| v.is_null()), Some(true));
        assert_eq!(label.field_kind("fromId"), None);
        assert!(label.field("fromId").is_none());
    }
}
