//! Connector kinds: the one place a new kind of connector plugs in.
//!
//! A connector crate offers a *kind* ([`ConnectorKind`]): its `type` name, its own
//! configuration type (read from the keys of its table that are its own), the secrets that
//! configuration names, and how one connector of the kind starts. A host registers kinds by
//! `type` name in a [`ConnectorKinds`] registry, which reads each connector's table into a
//! [`ConnectorConfig`] and starts it:
//!
//! - the settings every kind shares ([`ConnectorSettings`]: the name, `hint`,
//!   `max_in_flight`, `timeout_ms`, and the approval policy `approval`, `reverts`, `tools`)
//!   are read here, in one place, never by a kind;
//! - a table whose `type` no kind is registered for is an error naming the table
//!   (`connectors.NAME`) and listing the registered kinds, and registering two kinds of one
//!   name is refused ([`KindError::DuplicateKind`]);
//! - the secrets a configuration names are checked before it starts, and their values
//!   scrubbed from why a start failed;
//! - what a kind needs from its host (a store, a place to keep its data) it asks the start's
//!   [`HostResources`] for, by type.
//!
//! Tables are given as JSON ([`serde_json::Value`]), so this crate knows no file format.
//!
//! ```
//! use async_trait::async_trait;
//! use codemode::kind::{
//!     BoxError, ConnectorKind, ConnectorKinds, ConnectorSettings, HostResources, Started,
//! };
//! use codemode::{CodeOutcome, CodeTool, RustConnector, RustTool};
//! use serde_json::{json, Value};
//! use std::sync::Arc;
//!
//! /// `type = "greeter"`: one read-only method, `greet`, answering with a configured word.
//! struct Greeter;
//!
//! /// The greeter's own keys.
//! #[derive(Debug, serde::Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct GreeterConfig {
//!     greeting: String,
//! }
//!
//! /// Provided by the host: how the greeting ends.
//! struct Punctuation(&'static str);
//!
//! #[async_trait]
//! impl ConnectorKind for Greeter {
//!     type Config = GreeterConfig;
//!
//!     fn name(&self) -> &str {
//!         "greeter"
//!     }
//!
//!     async fn start(
//!         &self,
//!         config: &GreeterConfig,
//!         settings: &ConnectorSettings,
//!         host: &HostResources,
//!     ) -> Result<Started, BoxError> {
//!         let end = host.require::<Punctuation>("how a greeting ends")?.0;
//!         let greeting = format!("{}{end}", config.greeting);
//!         let greet = RustTool::new("greet", move |_args: Value, _ctx| {
//!             let greeting = greeting.clone();
//!             async move { Ok(json!(greeting)) }
//!         })
//!         .read_only();
//!         Ok(Started::new(RustConnector::new(&settings.name).tool(greet)))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut kinds = ConnectorKinds::new();
//! kinds.register(Greeter)?;
//! // A second kind named "greeter" is refused.
//! assert!(kinds.register(Greeter).is_err());
//!
//! let table = json!({ "type": "greeter", "greeting": "hello", "hint": "says hello" });
//! let config = kinds.read("hi", table)?;
//! assert_eq!(config.settings().hint.as_deref(), Some("says hello"));
//! let unknown = kinds.read("x", json!({ "type": "grpc" })).unwrap_err();
//! assert!(unknown.to_string().contains("connectors.x") && unknown.to_string().contains("greeter"));
//!
//! let host = HostResources::new().with(Punctuation("!"));
//! let started = kinds.start(&config, &host).await?;
//! let executor = Arc::new(codemode_quickjs::QuickJsExecutor::default());
//! let tool = CodeTool::builder(executor).connector_arc(started.connector).build()?;
//! let outcome = tool.call("async () => hi.greet({})").await;
//! assert_eq!(outcome, CodeOutcome::Completed { result: json!("hello!"), logs: vec![] });
//! # Ok(())
//! # }
//! ```

mod config;
mod connector_kind;
mod error;
mod registry;
mod resources;
mod settings;

pub use config::ConnectorConfig;
pub use connector_kind::{BoxError, ConnectorKind, SecretRef, Started};
pub use error::{KindError, MissingResource, MissingSecret, StartError};
pub use registry::ConnectorKinds;
pub use resources::HostResources;
pub use settings::ConnectorSettings;
