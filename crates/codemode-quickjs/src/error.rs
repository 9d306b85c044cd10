//! Errors raised before any code runs: bad input and bad configuration.

use thiserror::Error;

/// An example of what the model should send, used in every input error.
pub const EXAMPLE: &str =
    "async () => { const items = await tasks.list_tasks({}); return items.length; }";

/// Why model code could not be turned into a runnable function.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NormalizeError {
    /// The input holds no code (nothing, or only whitespace or comments).
    #[error("The code is empty{}. Send JavaScript or TypeScript that returns the result, for example: {EXAMPLE}", if *.only_comments { " (it holds only comments)" } else { "" })]
    Empty {
        /// Whether the input had comments but no statements.
        only_comments: bool,
    },
    /// The input is larger than the configured limit.
    #[error("The code is {bytes} bytes, more than the limit of {limit}. Send a short program: fetch data through the connectors inside the code (or pass a small reference) instead of pasting it into the code, for example: {EXAMPLE}")]
    TooLarge {
        /// The size of the input in bytes.
        bytes: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The code does not parse.
    #[error("SyntaxError: {message} (line {line}, column {column}). Fix the code and send the whole program again, for example: {EXAMPLE}")]
    Syntax {
        /// The parser's message.
        message: String,
        /// The 1-based line in the model's input.
        line: usize,
        /// The 1-based column in the model's input.
        column: usize,
    },
    /// The input is prose or another language, not code.
    #[error("The input is not JavaScript or TypeScript ({message} at line {line}, column {column}). Send only code, optionally in a ```js fence, for example: {EXAMPLE}")]
    NotCode {
        /// The parser's message.
        message: String,
        /// The 1-based line in the model's input.
        line: usize,
        /// The 1-based column in the model's input.
        column: usize,
    },
    /// A fenced block declares a language the sandbox does not run.
    #[error("The code block is marked `{0}`, but only JavaScript or TypeScript runs here. Rewrite it in JavaScript, for example: {EXAMPLE}")]
    Language(String),
    /// The input holds several fenced code blocks.
    #[error("The input holds {0} code blocks; send exactly one program (one block, or plain code), for example: {EXAMPLE}")]
    SeveralBlocks(usize),
    /// The code imports a module.
    #[error("`import` is not available in the sandbox (line {line}, column {column}): there are no modules; the connectors are already globals. Remove the import and call them directly, for example: {EXAMPLE}")]
    Import {
        /// The 1-based line in the model's input.
        line: usize,
        /// The 1-based column in the model's input.
        column: usize,
    },
    /// The TypeScript could not be turned into JavaScript.
    #[error("TypeScript could not be compiled: {0}. Use plain JavaScript or simpler TypeScript.")]
    TypeScript(String),
}

/// Why a namespace cannot become a sandbox global.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NamespaceError {
    /// The name is not a JavaScript identifier.
    #[error("`{0}` cannot be a sandbox global: a connector name must be a JavaScript identifier (letters, digits, `_` or `$`, not starting with a digit), such as `github` or `my_tasks`")]
    NotIdentifier(String),
    /// The name is a reserved word or shadows a built-in global.
    #[error("`{0}` cannot be a sandbox global: it is a reserved word or a built-in global of the sandbox (like `Promise`, `console`, `JSON`, `codemode`); rename the connector, for example `{0}_api`")]
    Reserved(String),
    /// Two namespaces share a name.
    #[error("`{0}` is configured twice; connector names must be unique")]
    Duplicate(String),
}
