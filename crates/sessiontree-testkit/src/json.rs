//! Reading the JSON a command answers (`--json`, the archive's dumps, the reference's).

use serde_json::Value;

/// The string `key` of every object in the array `v` (panics when `v` is not an array or
/// an element has no string `key`: the answer is not what the test expects).
pub fn strs<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    array(v)
        .iter()
        .map(|e| {
            e[key]
                .as_str()
                .unwrap_or_else(|| panic!("no string {key:?} in {e}"))
        })
        .collect()
}

/// The elements of the array `v` (panics when it is not an array).
pub fn array(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

/// The string `key` of those objects in the array `v` that have one (panics when `v` is
/// not an array).
pub fn present<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    array(v).iter().filter_map(|e| e[key].as_str()).collect()
}

/// A Pi `toolResult` message of a context as the conversation tests compare it:
/// `["result", toolCallId, its texts one a line, isError]`.
pub fn tool_result_event(m: &Value) -> Value {
    serde_json::json!([
        "result",
        m["toolCallId"],
        present(&m["content"], "text").join("\n"),
        m["isError"]
    ])
}
