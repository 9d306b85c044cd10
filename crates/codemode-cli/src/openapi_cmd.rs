//! `codemode openapi SPEC`: the OpenAPI search/execute MCP server on stdio.

use crate::app::{self, CommonArgs, Settings};
use anyhow::{bail, Context, Result};
use codemode::kind::{ConnectorKinds, HostResources};
use codemode::Runtime;
use codemode_openapi::{AuthConfig, OpenApiConfig};
use codemode_server::openapi_mcp::{OpenApiMcp, SpecKind};
use codemode_server::start_connectors;

/// Flags of `codemode openapi`.
#[derive(Debug, Clone, clap::Args)]
pub struct OpenApiArgs {
    /// The OpenAPI 3.0/3.1 document: a file (JSON or YAML) or an http(s):// URL.
    pub spec: String,
    /// Where requests go (default: the document's first `servers` entry).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The sandbox global holding `spec()` and `request()`.
    #[arg(long, default_value = "api")]
    pub name: String,
    /// The environment variable holding a bearer token added to every request host-side.
    #[arg(long, value_name = "VAR")]
    pub bearer_env: Option<String>,
    /// The budget of each tool's output, in tokens (about four characters each).
    #[arg(long, default_value_t = 6_000)]
    pub max_tokens: usize,
}

/// Loads the document through the registry (as the `openapi-spec` kind, with
/// `start_connectors`), builds the two runtimes and serves MCP on stdio.
pub async fn run(common: &CommonArgs, args: &OpenApiArgs) -> Result<()> {
    let mut settings = Settings::load(common)?;
    settings.demo = false;
    let mut config = OpenApiConfig::new(args.name.clone(), args.spec.clone());
    config.base_url = args.base_url.clone();
    // As the reference's openApiMcpServer: `execute` is the API itself, no approval step.
    config.settings.approval.allow = vec!["*".into()];
    config.auth = args
        .bearer_env
        .clone()
        .map(|token_env| AuthConfig::Bearer { token_env });
    let kind = SpecKind::new();
    let kinds = ConnectorKinds::new().with(kind.clone())?;
    let connector = kind.config(config)?;
    let (store, _, _, _) = app::open_store(&settings).await?;
    let executor = app::executor(&settings).await?;
    let progress = crate::progress::Progress::start(&format!("loading {}", args.spec));
    let execute = Runtime::builder(store.clone(), executor.clone()).name("openapi-execute");
    let started = start_connectors(&kinds, &[connector], &HostResources::new(), execute).await;
    if let Some((_, error)) = started.failed.first() {
        bail!("{error}");
    }
    let loaded = kind
        .take_loaded()
        .with_context(|| format!("the document {} was not loaded", args.spec))?;
    progress.done();
    let execute = started
        .builder
        .build()
        .context("cannot build the execute runtime")?;
    let search = Runtime::builder(store, executor)
        .name("openapi-search")
        .connector(loaded.search)
        .build()
        .context("cannot build the search runtime")?;
    tracing::info!(spec = %args.spec, "serving the OpenAPI search and execute tools over stdio");
    OpenApiMcp::new(args.name.clone(), search, execute, args.max_tokens)
        .with_document(&loaded.index, loaded.description)
        .serve_stdio()
        .await?;
    Ok(())
}
