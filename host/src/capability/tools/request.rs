//! What the tool capability is asked to do: one call.

/// A call of tool `name` with `input`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// Input (JSON text by convention).
    pub input: String,
}
