//! Typed messages: Pi's message shapes as serde structs, for agents that build or read
//! messages in Rust (FORMAT.md section 5).
//!
//! The raw path stays the exact one: an [`Entry`] keeps its line's bytes, and
//! `Session::append_message` (crate `sessiontree`) takes any [`Json`]. These types sit on
//! top of it:
//!
//! * **Writing.** Each message type's `to_json` gives the [`Json`] that Pi 1.6.0 writes for
//!   the same values, key for key in Pi's order (`role` first, then the fields in the order
//!   Pi's agent builds them; absent options left out, as `JSON.stringify` leaves out
//!   `undefined`).
//! * **Reading.** [`AgentMessage::from_entry`] (or [`AgentMessage::from_raw`] for a context
//!   message) parses a stored message. Nothing is lost: a field these structs do not name
//!   is kept in the struct's `extra` map, in file order, and written back after the named
//!   fields; a role or content block this module does not know is kept whole as
//!   [`AgentMessage::Other`] / [`ContentBlock::Other`], and so is a message of a known role
//!   whose fields have other types (a string `timestamp`, `null` content). For every message
//!   Pi writes, reading and writing again gives the same bytes; members another writer put
//!   in a different order come back with the same values, in Pi's order. What `serde_json`
//!   cannot hold (a string with a lone surrogate) is an error: use the raw path for it.
//!
//! Fields that Pi adds after `timestamp` and whose order depends on the provider
//! (`responseId`, `errorMessage`, `durationMs`, ... on an assistant message) are not named:
//! they live in `extra`, in the order they were set, with accessors for the common ones
//! ([`AssistantMessage::error_message`]).
//!
//! ```
//! use sessiontree_core::message::{AgentMessage, AssistantMessage, StopReason, UserMessage};
//!
//! let user = UserMessage::text("What is in src/?").at(1733234400000);
//! assert_eq!(
//!     user.to_json()?.as_str(),
//!     r#"{"role":"user","content":[{"type":"text","text":"What is in src/?"}],"timestamp":1733234400000}"#
//! );
//!
//! let reply = AssistantMessage::new("anthropic-messages", "anthropic", "claude-sonnet-4-5")
//!     .with_text("Let me look.")
//!     .with_tool_call("toolu_1", "bash", serde_json::json!({"command": "ls src"}))
//!     .with_stop_reason(StopReason::ToolUse)
//!     .at(1733234401000);
//! let json = reply.to_json()?;
//! // Reading it back gives the same message.
//! let back = AgentMessage::from_raw(json.raw())?;
//! assert_eq!(back, AgentMessage::Assistant(reply));
//! # Ok::<(), sessiontree_core::Error>(())
//! ```

use crate::date::now_ms;
use crate::entry::{Entry, EntryType};
use crate::error::{Error, Result};
use crate::json::{Json, Raw};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Map;
/// A JSON value of an unnamed member or of tool arguments (`serde_json`'s, re-exported).
pub use serde_json::Value;

/// Members a struct does not name, in the order they were read (or inserted). Written after
/// the named fields.
pub type Extra = Map<String, Value>;

/// A user or custom message's `content`: a plain string, or an array of blocks (Pi's
/// interactive prompt writes blocks: one text block, then any images).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// `"content": "text"`.
    Text(String),
    /// `"content": [{"type": "text", ...}, {"type": "image", ...}]`.
    Blocks(Vec<ContentBlock>),
}

impl Content {
    /// The text as Pi's listing reads it: the string itself, or the text blocks joined by a
    /// space (FORMAT.md section 11).
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Blocks(b) => blocks_text(b, " "),
        }
    }
}

fn blocks_text(blocks: &[ContentBlock], sep: &str) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(sep)
}

/// `{"type": "text", "text": ...}`. `textSignature` (some providers) is kept in `extra`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Members after `text` (`textSignature`, unknown ones), in order.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `{"type": "thinking", "thinking": ...}`: the model's reasoning, shown but not answered.
/// `thinkingSignature` and `redacted` are kept in `extra`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThinkingContent {
    /// The reasoning text (empty when the provider redacted it).
    pub thinking: String,
    /// Members after `thinking` (`thinkingSignature`, `redacted`, unknown ones), in order.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `{"type": "image", "data": ..., "mimeType": ...}`: an image, base64-encoded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageContent {
    /// The image bytes, base64.
    pub data: String,
    /// `image/png`, `image/jpeg`, ...
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    /// Unknown members, in order.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `{"type": "toolCall", "id", "name", "arguments"}`: a call the model asks the agent to
/// run; answered by a [`ToolResultMessage`] with the same id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, as the provider issued it (`toolu_...`, `call_...`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object (`{}` when the model sent invalid JSON; Pi then sets
    /// `argumentsError`).
    pub arguments: Value,
    /// Members after `arguments` (`thoughtSignature`, `namespace`, `argumentsError`,
    /// `partialJson` in old files, unknown ones), in order.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One element of a content array.
#[derive(Clone, Debug, PartialEq)]
pub enum ContentBlock {
    /// `type: "text"`.
    Text(TextContent),
    /// `type: "thinking"` (assistant messages).
    Thinking(ThinkingContent),
    /// `type: "image"` (user, tool result and custom messages).
    Image(ImageContent),
    /// `type: "toolCall"` (assistant messages).
    ToolCall(ToolCall),
    /// Any other block (another `type`, or no `type`), kept as it was.
    Other(Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text(TextContent {
            text: text.into(),
            extra: Extra::new(),
        })
    }
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum TaggedBlock<'a> {
    #[serde(rename = "text")]
    Text(&'a TextContent),
    #[serde(rename = "thinking")]
    Thinking(&'a ThinkingContent),
    #[serde(rename = "image")]
    Image(&'a ImageContent),
    #[serde(rename = "toolCall")]
    ToolCall(&'a ToolCall),
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text(b) => TaggedBlock::Text(b).serialize(s),
            ContentBlock::Thinking(b) => TaggedBlock::Thinking(b).serialize(s),
            ContentBlock::Image(b) => TaggedBlock::Image(b).serialize(s),
            ContentBlock::ToolCall(b) => TaggedBlock::ToolCall(b).serialize(s),
            ContentBlock::Other(v) => v.serialize(s),
        }
    }
}

/// Splits `tag` off an object whose first member it is; `None` (keep the value whole) when
/// the tag is missing, not a string, or not first (then writing the typed form back would
/// move it).
fn split_tag(v: &Value, tag: &str) -> Option<(String, Map<String, Value>)> {
    let obj = v.as_object()?;
    let (first, t) = obj.iter().next()?;
    if first != tag {
        return None;
    }
    let t = t.as_str()?.to_string();
    let mut rest = obj.clone();
    rest.shift_remove(tag);
    Some((t, rest))
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let Some((t, rest)) = split_tag(&v, "type") else {
            return Ok(ContentBlock::Other(v));
        };
        let rest = Value::Object(rest);
        let typed = match t.as_str() {
            "text" => serde_json::from_value(rest).map(ContentBlock::Text),
            "thinking" => serde_json::from_value(rest).map(ContentBlock::Thinking),
            "image" => serde_json::from_value(rest).map(ContentBlock::Image),
            "toolCall" => serde_json::from_value(rest).map(ContentBlock::ToolCall),
            _ => return Ok(ContentBlock::Other(v)),
        };
        // A known type with an unexpected shape (a number where text belongs) is kept whole.
        Ok(typed.unwrap_or(ContentBlock::Other(v)))
    }
}

/// Why the model stopped (`stopReason`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StopReason {
    /// `"stop"`: the reply is complete.
    Stop,
    /// `"length"`: the output token limit cut it off.
    Length,
    /// `"toolUse"`: the reply ends with tool calls that await results.
    ToolUse,
    /// `"error"`: the request failed (`errorMessage` says why).
    Error,
    /// `"aborted"`: the user (or the process) stopped the request.
    Aborted,
    /// `"deferred"`: a background (batch) request whose result is fetched later.
    Deferred,
    /// `"pending"`: still streaming (Pi's value while a reply is being built).
    Pending,
    /// Any other value, kept as written.
    Other(String),
}

impl From<String> for StopReason {
    fn from(s: String) -> StopReason {
        match s.as_str() {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            "deferred" => StopReason::Deferred,
            "pending" => StopReason::Pending,
            _ => StopReason::Other(s),
        }
    }
}

impl From<StopReason> for String {
    fn from(r: StopReason) -> String {
        match r {
            StopReason::Stop => "stop".into(),
            StopReason::Length => "length".into(),
            StopReason::ToolUse => "toolUse".into(),
            StopReason::Error => "error".into(),
            StopReason::Aborted => "aborted".into(),
            StopReason::Deferred => "deferred".into(),
            StopReason::Pending => "pending".into(),
            StopReason::Other(s) => s,
        }
    }
}

/// Token counts and cost of one model request (`usage` of an assistant message, of a
/// `usage` entry, of a compaction or branch summary).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens not read from the cache.
    pub input: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// The sum Pi records (absent in files of releases before 0.74).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Cost in US dollars.
    pub cost: Cost,
    /// Members Pi sets later (`cacheWrite1h`, `reasoning`) and unknown ones, in order.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The cost of a request in US dollars, per kind of token (`usage.cost`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// For input tokens.
    pub input: f64,
    /// For output tokens.
    pub output: f64,
    /// For cache reads.
    pub cache_read: f64,
    /// For cache writes.
    pub cache_write: f64,
    /// The best total Pi knows: the provider's billed cost when reported, else the sum.
    pub total: f64,
    /// `totalFromProvider` and unknown members, in order.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `null` is a value here, not an absence: `Some(Value::Null)`.
fn present<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A member that may be `null`: `Some(None)` is a stored `null`, `None` (by `default`) an
/// absent one.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> std::result::Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// `role: "user"`: what the person typed (and attached).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// The prompt: a string, or text and image blocks.
    pub content: Content,
    /// When it was sent, in ms since the epoch.
    pub timestamp: i64,
    /// Unknown members, in order.
    #[serde(flatten)]
    pub extra: Extra,
}

impl UserMessage {
    /// A typed prompt as Pi's interactive mode stores it: one text block, timestamped now.
    pub fn text(text: impl Into<String>) -> UserMessage {
        UserMessage {
            content: Content::Blocks(vec![ContentBlock::text(text)]),
            timestamp: now_ms(),
            extra: Extra::new(),
        }
    }
}

/// `role: "assistant"`: one reply of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool call blocks, in the order the model produced them.
    pub content: Vec<ContentBlock>,
    /// The wire protocol (`anthropic-messages`, `openai-responses`, ...).
    pub api: String,
    /// The provider (`anthropic`, `openai`, ...); with `model`, what the context reports as
    /// the current model.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// Tokens and cost of the request.
    pub usage: Usage,
    /// Why the reply ended.
    pub stop_reason: StopReason,
    /// When the request started, in ms since the epoch.
    pub timestamp: i64,
    /// Members Pi sets after `timestamp` (`responseId`, `errorMessage`, `durationMs`, ...)
    /// and unknown ones, in order.
    #[serde(flatten)]
    pub extra: Extra,
}

impl AssistantMessage {
    /// An empty reply (no content, zero usage, `stopReason: "stop"`), timestamped now, in the
    /// order Pi's providers build one.
    pub fn new(
        api: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: api.into(),
            provider: provider.into(),
            model: model.into(),
            usage: Usage {
                total_tokens: Some(0),
                ..Usage::default()
            },
            stop_reason: StopReason::Stop,
            timestamp: now_ms(),
            extra: Extra::new(),
        }
    }

    /// Adds a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(ContentBlock::text(text));
        self
    }

    /// Adds a thinking block.
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            extra: Extra::new(),
        }));
        self
    }

    /// Adds a tool call block.
    pub fn with_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.content.push(ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            extra: Extra::new(),
        }));
        self
    }

    /// Sets `usage`.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets `stopReason`.
    pub fn with_stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = reason;
        self
    }

    /// Sets `errorMessage` (after `timestamp`, where Pi puts it).
    pub fn with_error_message(mut self, message: impl Into<String>) -> Self {
        self.extra
            .insert("errorMessage".into(), Value::String(message.into()));
        self
    }

    /// Sets `thinkingLevel` (after `timestamp`, where Pi's agent loop puts the level it
    /// asked for: `"off"`, `"low"`, `"high"`, ...).
    pub fn with_thinking_level(mut self, level: impl Into<String>) -> Self {
        self.extra
            .insert("thinkingLevel".into(), Value::String(level.into()));
        self
    }

    /// `errorMessage`, when the request failed or was aborted.
    pub fn error_message(&self) -> Option<&str> {
        self.extra.get("errorMessage").and_then(Value::as_str)
    }

    /// The text blocks, joined by a newline.
    pub fn text(&self) -> String {
        blocks_text(&self.content, "\n")
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        })
    }
}

/// `role: "toolResult"`: what a tool call returned, sent to the model as its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The id of the [`ToolCall`] this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What the model sees: text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Data for the user interface only (diffs, exit codes...), never sent to the model.
    /// `Some(Value::Null)` is a stored `null`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub details: Option<Value>,
    /// Tokens the tool itself spent (a sub-agent), outside the main context's accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// True when the tool failed; the content then says why.
    pub is_error: bool,
    /// How long the tool ran, in ms (Pi 1.6; absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// When the result was made, in ms since the epoch.
    pub timestamp: i64,
    /// Unknown members, in order.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolResultMessage {
    /// A successful result with one text block, timestamped now.
    pub fn text(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        ToolResultMessage {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content: vec![ContentBlock::text(text)],
            details: None,
            usage: None,
            is_error: false,
            duration_ms: None,
            timestamp: now_ms(),
            extra: Extra::new(),
        }
    }

    /// Marks the result as an error (`isError: true`).
    pub fn failed(mut self) -> Self {
        self.is_error = true;
        self
    }

    /// Sets `details`.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Sets `durationMs`.
    pub fn with_duration_ms(mut self, ms: u64) -> Self {
        self.duration_ms = Some(ms);
        self
    }
}

/// `role: "bashExecution"`: a shell command the user ran with `!` (`!!`: kept out of the
/// model's context).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    /// The command line.
    pub command: String,
    /// What it printed (stdout and stderr), possibly truncated.
    pub output: String,
    /// The exit code: `Some(Some(n))`. Absent (`None`) or `null` (`Some(None)`) when the
    /// process did not exit normally (killed, cancelled); both are kept as they were.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    pub exit_code: Option<Option<i64>>,
    /// True when the user cancelled the command.
    pub cancelled: bool,
    /// True when `output` was cut; `full_output_path` then names the whole output.
    pub truncated: bool,
    /// A file holding the full output of a truncated command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// When it ran, in ms since the epoch.
    pub timestamp: i64,
    /// `true` for `!!` commands: shown, but not sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    /// Unknown members, in order.
    #[serde(flatten)]
    pub extra: Extra,
}

impl BashExecutionMessage {
    /// A command that ran to completion, timestamped now.
    pub fn new(command: impl Into<String>, output: impl Into<String>, exit_code: i64) -> Self {
        BashExecutionMessage {
            command: command.into(),
            output: output.into(),
            exit_code: Some(Some(exit_code)),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            timestamp: now_ms(),
            exclude_from_context: None,
            extra: Extra::new(),
        }
    }
}

/// `role: "custom"`: a message an extension injects into the conversation (sent to the
/// model as a user message; `display` says whether the interface shows it). Version-2
/// files call this role `hookMessage`; loading migrates it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// The extension's name for this kind of message.
    pub custom_type: String,
    /// What the model sees.
    pub content: Content,
    /// Whether the interface shows the message.
    pub display: bool,
    /// Extension data, not sent to the model. `Some(Value::Null)` is a stored `null`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub details: Option<Value>,
    /// When it was made, in ms since the epoch.
    pub timestamp: i64,
    /// Unknown members, in order.
    #[serde(flatten)]
    pub extra: Extra,
}

impl CustomMessage {
    /// A message with string content, timestamped now.
    pub fn new(custom_type: impl Into<String>, content: impl Into<String>, display: bool) -> Self {
        CustomMessage {
            custom_type: custom_type.into(),
            content: Content::Text(content.into()),
            display,
            details: None,
            timestamp: now_ms(),
            extra: Extra::new(),
        }
    }
}

/// `at` and `to_json`, the same for every message type.
macro_rules! timestamped_message {
    ($($ty:ident => $tag:ident),* $(,)?) => {$(
        impl $ty {
            /// Sets `timestamp` (ms since the epoch).
            pub fn at(mut self, timestamp_ms: i64) -> Self {
                self.timestamp = timestamp_ms;
                self
            }

            /// The JSON Pi writes for this message.
            pub fn to_json(&self) -> Result<Json> {
                to_json(&Tagged::$tag(self))
            }
        }
    )*};
}

timestamped_message! {
    UserMessage => User,
    AssistantMessage => Assistant,
    ToolResultMessage => ToolResult,
    BashExecutionMessage => BashExecution,
    CustomMessage => Custom,
}

/// Any stored message: the `message` of a `message` entry (Pi's `AgentMessage`).
#[derive(Clone, Debug, PartialEq)]
pub enum AgentMessage {
    /// `role: "user"`.
    User(UserMessage),
    /// `role: "assistant"`.
    Assistant(AssistantMessage),
    /// `role: "toolResult"`.
    ToolResult(ToolResultMessage),
    /// `role: "bashExecution"`.
    BashExecution(BashExecutionMessage),
    /// `role: "custom"`.
    Custom(CustomMessage),
    /// Any other message, kept whole: other roles (`system`, `hookMessage`, roles of newer
    /// writers), and messages of a known role whose fields do not have the types above (a
    /// user message without `timestamp`, say).
    Other(Value),
}

#[derive(Serialize)]
#[serde(tag = "role")]
enum Tagged<'a> {
    #[serde(rename = "user")]
    User(&'a UserMessage),
    #[serde(rename = "assistant")]
    Assistant(&'a AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(&'a ToolResultMessage),
    #[serde(rename = "bashExecution")]
    BashExecution(&'a BashExecutionMessage),
    #[serde(rename = "custom")]
    Custom(&'a CustomMessage),
}

fn to_json<T: Serialize + ?Sized>(v: &T) -> Result<Json> {
    Json::from_serialize(v)
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            AgentMessage::User(m) => Tagged::User(m).serialize(s),
            AgentMessage::Assistant(m) => Tagged::Assistant(m).serialize(s),
            AgentMessage::ToolResult(m) => Tagged::ToolResult(m).serialize(s),
            AgentMessage::BashExecution(m) => Tagged::BashExecution(m).serialize(s),
            AgentMessage::Custom(m) => Tagged::Custom(m).serialize(s),
            AgentMessage::Other(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if !v.is_object() {
            return Err(D::Error::custom("a message is a JSON object"));
        }
        let Some((role, rest)) = split_tag(&v, "role") else {
            return Ok(AgentMessage::Other(v));
        };
        let rest = Value::Object(rest);
        let typed = match role.as_str() {
            "user" => serde_json::from_value(rest).map(AgentMessage::User),
            "assistant" => serde_json::from_value(rest).map(AgentMessage::Assistant),
            "toolResult" => serde_json::from_value(rest).map(AgentMessage::ToolResult),
            "bashExecution" => serde_json::from_value(rest).map(AgentMessage::BashExecution),
            "custom" => serde_json::from_value(rest).map(AgentMessage::Custom),
            _ => return Ok(AgentMessage::Other(v)),
        };
        Ok(typed.unwrap_or(AgentMessage::Other(v)))
    }
}

impl AgentMessage {
    /// The message of a `message` entry; `None` for other entry types.
    ///
    /// Reads the entry's `message` value as stored: before migration a version-2
    /// `hookMessage` comes back as [`AgentMessage::Other`].
    pub fn from_entry(entry: &Entry) -> Option<Result<AgentMessage>> {
        if entry.entry_type != EntryType::Message {
            return None;
        }
        Some(match entry.message() {
            Some(m) => AgentMessage::from_raw(m),
            None => Err(Error::Json(format!(
                "line {}: a message entry without a `message`",
                entry.line
            ))),
        })
    }

    /// Parses one message (a context message's [`raw`](crate::context::Message::raw), a
    /// `message` value). Errors when the value is not an object or holds a string with a
    /// lone surrogate.
    pub fn from_raw(raw: Raw<'_>) -> Result<AgentMessage> {
        serde_json::from_str(raw.text()).map_err(|e| Error::Json(e.to_string()))
    }

    /// `role`, when the message has a string one.
    pub fn role(&self) -> Option<&str> {
        match self {
            AgentMessage::User(_) => Some("user"),
            AgentMessage::Assistant(_) => Some("assistant"),
            AgentMessage::ToolResult(_) => Some("toolResult"),
            AgentMessage::BashExecution(_) => Some("bashExecution"),
            AgentMessage::Custom(_) => Some("custom"),
            AgentMessage::Other(v) => v.get("role").and_then(Value::as_str),
        }
    }

    /// `timestamp` in ms since the epoch, when it is a number.
    pub fn timestamp(&self) -> Option<i64> {
        match self {
            AgentMessage::User(m) => Some(m.timestamp),
            AgentMessage::Assistant(m) => Some(m.timestamp),
            AgentMessage::ToolResult(m) => Some(m.timestamp),
            AgentMessage::BashExecution(m) => Some(m.timestamp),
            AgentMessage::Custom(m) => Some(m.timestamp),
            AgentMessage::Other(v) => v.get("timestamp").and_then(Value::as_i64),
        }
    }

    /// The JSON Pi writes for this message (for [`AgentMessage::Other`], the value as it
    /// was, canonicalized).
    pub fn to_json(&self) -> Result<Json> {
        to_json(self)
    }
}

macro_rules! into_agent_message {
    ($($t:ident => $v:ident),*) => {$(
        impl From<$t> for AgentMessage {
            fn from(m: $t) -> AgentMessage {
                AgentMessage::$v(m)
            }
        }
    )*};
}
into_agent_message!(UserMessage => User, AssistantMessage => Assistant,
    ToolResultMessage => ToolResult, BashExecutionMessage => BashExecution,
    CustomMessage => Custom);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::canonicalize;

    fn roundtrip(text: &str) -> (AgentMessage, String) {
        let m = AgentMessage::from_raw(Raw::parse(text.as_bytes()).unwrap()).unwrap();
        let out = m.to_json().unwrap().into_string();
        (m, out)
    }

    #[test]
    fn unknown_members_roles_and_blocks_survive_in_order() {
        let text = r#"{"role":"assistant","content":[{"type":"text","text":"a","textSignature":"s"},{"type":"toolCall","id":"c","name":"n","arguments":{},"partialJson":"{"},{"type":"redacted","data":1},{"text":"no type"}],"api":"x","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.000009,"output":1e-7,"cacheRead":0,"cacheWrite":0,"total":0.0000091},"reasoning":0},"stopReason":"error","timestamp":1,"responseId":"r","errorMessage":"boom","durationMs":5,"zzz":null}"#;
        let (m, out) = roundtrip(text);
        assert_eq!(out, canonicalize(text.as_bytes()).unwrap());
        let AgentMessage::Assistant(a) = m else {
            panic!("typed: {m:?}")
        };
        assert_eq!(a.error_message(), Some("boom"));
        assert_eq!(a.stop_reason, StopReason::Error);
        assert!(matches!(a.content[2], ContentBlock::Other(_)));
        assert!(matches!(a.content[3], ContentBlock::Other(_)));
        assert_eq!(a.tool_calls().count(), 1);

        for other in [
            r#"{"role":"system","content":"be brief","timestamp":1}"#,
            r#"{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":1}"#,
            r#"{"role":"user","content":"no timestamp"}"#,
            r#"{"content":"role not first","role":"user","timestamp":1}"#,
        ] {
            let (m, out) = roundtrip(other);
            assert!(matches!(m, AgentMessage::Other(_)), "{other}");
            assert_eq!(out, other);
        }
        // null details are a value, not an absence.
        let tr = r#"{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"details":null,"isError":false,"timestamp":2}"#;
        assert_eq!(roundtrip(tr).1, tr);
        assert!(AgentMessage::from_raw(Raw::parse(b"[1]").unwrap()).is_err());
    }

    #[test]
    fn from_entry_reads_message_entries_only() {
        let e = Entry::parse(r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":5}}"#.into()).unwrap();
        let m = AgentMessage::from_entry(&e).unwrap().unwrap();
        assert_eq!(m.role(), Some("user"));
        assert_eq!(m.timestamp(), Some(5));
        let label = Entry::parse(r#"{"type":"label","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:00.000Z","targetId":"a","label":"x"}"#.into()).unwrap();
        assert!(AgentMessage::from_entry(&label).is_none());
    }
}
