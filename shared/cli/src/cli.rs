//! Command-line arguments (clap). Usage errors exit with status 2.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::account_links::LinksArgs;
use crate::chat::ChatArgs;
use crate::compact::CompactArgs;
use crate::config::Overrides;
use crate::eval::EvalArgs;
use crate::replay::ReplayArgs;
use crate::serve::ServeArgs;
use crate::validate::ValidateArgs;

/// Baton: an orchestrator assistant that delegates to specialist agents.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Settings any command accepts; each wins over `baton.toml` and `BATON_*` variables.
#[derive(Debug, Args)]
pub(crate) struct GlobalArgs {
    /// Config file [default: ./baton.toml when present]
    #[arg(long, global = true, value_name = "FILE", env = "BATON_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    /// Registry folder [default: shared/registry]
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) registry: Option<PathBuf>,
    /// Folder of the local store and chat history [default: .baton]
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// Model serving the agents: `offline`, `scripted:FILE`, `registry` (each card's own
    /// model from models.yaml, on its provider), `bedrock` (the same, with Bedrock; needs a
    /// baton built with `--features aws`), or a models.yaml key (every card served by
    /// that `openai_compatible` model, e.g. `llama-cpp` or `ollama`) [default: offline]
    #[arg(long, global = true, value_name = "MODEL")]
    pub(crate) model: Option<String>,
    /// Where episodes are kept: `embedded` (a local file) or `dynamodb` (the journal table
    /// and bodies bucket named by `table` and `bucket`; needs a baton built with
    /// `--features aws`) [default: embedded]
    #[arg(long, global = true, value_name = "STORE")]
    pub(crate) store: Option<String>,
    /// DynamoDB table of the journal (with `--store dynamodb`)
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) table: Option<String>,
    /// S3 bucket of large bodies (with `--store dynamodb`)
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) bucket: Option<String>,
    /// Create the journal table when it does not exist (with `--store dynamodb`; meant for
    /// DynamoDB Local — on AWS the SAM template creates it)
    #[arg(long, global = true)]
    pub(crate) create_table: bool,
    /// Who turns run as [default: local-user]
    #[arg(long, global = true, value_name = "ID")]
    pub(crate) principal: Option<String>,
    /// Orchestrator to start turns at [default: the registry's only top-level one]
    #[arg(long, global = true, value_name = "ID")]
    pub(crate) orchestrator: Option<String>,
    /// Log filter, e.g. `info` or `baton_runtime=debug`
    #[arg(long, global = true, value_name = "FILTER")]
    pub(crate) log: Option<String>,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Ask one question, or chat interactively when no message is given.
    Chat(ChatArgs),
    /// Serve the HTTP API (turns streamed as Server-Sent Events).
    Serve(ServeArgs),
    /// Serve the assistant as an MCP server over stdin and stdout (for an MCP client that
    /// starts it): an `ask` tool, and an `ask_<id>` tool per specialist.
    Mcp,
    /// Check a registry: every reference, schema and connector setting.
    Validate(ValidateArgs),
    /// Fold older turns of conversations into their summaries now: every episode that is
    /// due, or one episode.
    Compact(CompactArgs),
    /// Run the registry's eval suites (`evals/*.yaml`): how well the orchestrator routes.
    Eval(EvalArgs),
    /// Show one of your conversations as you saw it, turn by turn, with who was consulted,
    /// how each turn was routed and what it cost.
    Replay(ReplayArgs),
    /// Your account links: the servers you connected your own accounts to, and revoking
    /// one (its tools then ask you to connect again).
    Links(LinksArgs),
    /// What Baton remembers of you across conversations: list, search, save, forget
    /// (one, or all), export as JSON, and turning memory on or off for you.
    Memory(crate::memory::MemoryArgs),
}

impl Cli {
    /// Reads the settings and runs the command.
    ///
    /// # Errors
    /// Bad configuration, or the command's own failure.
    pub(crate) async fn run(self) -> anyhow::Result<ExitCode> {
        let settings = crate::config::load(&self.overrides())?;
        match self.command {
            Command::Chat(args) => crate::chat::run(&settings, args).await,
            Command::Serve(args) => crate::serve::run(&settings, &args).await,
            Command::Mcp => crate::mcp::run(&settings).await,
            Command::Validate(args) => crate::validate::run(&settings, &args).await,
            Command::Compact(args) => crate::compact::run(&settings, &args).await,
            Command::Eval(args) => crate::eval::run(&settings, &args).await,
            Command::Replay(args) => crate::replay::run(&settings, &args).await,
            Command::Links(args) => crate::account_links::run(&settings, &args).await,
            Command::Memory(args) => crate::memory::run(&settings, &args).await,
        }
    }

    /// The flags that override configuration, including each command's own.
    pub(crate) fn overrides(&self) -> Overrides {
        let g = &self.global;
        let mut o = Overrides {
            config: g.config.clone(),
            registry: g.registry.clone(),
            data_dir: g.data_dir.clone(),
            model: g.model.clone(),
            store: g.store.clone(),
            table: g.table.clone(),
            bucket: g.bucket.clone(),
            create_table: g.create_table,
            addr: None,
            principal: g.principal.clone(),
            orchestrator: g.orchestrator.clone(),
            log: g.log.clone(),
        };
        match &self.command {
            Command::Serve(s) => o.addr.clone_from(&s.addr),
            Command::Validate(v) => {
                if let Some(dir) = &v.dir {
                    o.registry = Some(dir.clone());
                }
            }
            Command::Chat(_)
            | Command::Mcp
            | Command::Compact(_)
            | Command::Eval(_)
            | Command::Replay(_)
            | Command::Links(_)
            | Command::Memory(_) => {}
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_validate_dir_is_the_registry() {
        let cli = Cli::try_parse_from(["baton", "validate", "some/dir"]).unwrap();
        assert_eq!(cli.overrides().registry, Some(PathBuf::from("some/dir")));
    }

    #[test]
    fn global_flags_go_before_or_after_the_command() {
        let a = Cli::try_parse_from(["baton", "--model", "offline", "chat", "hi"]).unwrap();
        let b = Cli::try_parse_from(["baton", "chat", "hi", "--model", "offline"]).unwrap();
        assert_eq!(a.overrides().model, b.overrides().model);
    }

    #[test]
    fn chat_words_are_one_message() {
        let cli = Cli::try_parse_from(["baton", "chat", "find", "coffee"]).unwrap();
        let Command::Chat(args) = cli.command else {
            panic!("not chat");
        };
        assert_eq!(args.message, ["find", "coffee"]);
    }

    #[test]
    fn compact_needs_due_or_an_episode_and_not_both() {
        assert!(Cli::try_parse_from(["baton", "compact"]).is_err());
        assert!(Cli::try_parse_from(["baton", "compact", "--due", "--episode", "e"]).is_err());
        assert!(Cli::try_parse_from(["baton", "compact", "--episode", "e"]).is_ok());
    }

    #[test]
    fn replay_needs_an_episode() {
        assert!(Cli::try_parse_from(["baton", "replay"]).is_err());
        let cli = Cli::try_parse_from(["baton", "replay", "ep_1", "--bodies", "--json"]).unwrap();
        let Command::Replay(args) = cli.command else {
            panic!("not replay");
        };
        assert_eq!(args.episode, "ep_1");
        assert!(args.bodies && args.json);
    }

    #[test]
    fn the_arguments_are_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
