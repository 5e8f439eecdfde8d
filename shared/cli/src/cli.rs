//! Command-line arguments (clap). Usage errors exit with status 2.

use std::path::PathBuf;
use std::process::ExitCode;

use baton_core::directive::DirectMode;
use clap::{Args, Parser, Subcommand};

use crate::config::Overrides;

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
}

/// `baton links`.
#[derive(Debug, Args)]
pub(crate) struct LinksArgs {
    /// What to do (default: list them).
    #[command(subcommand)]
    pub(crate) action: Option<LinksAction>,
    /// Print as JSON.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

/// `baton links revoke`.
#[derive(Debug, Subcommand)]
pub(crate) enum LinksAction {
    /// List your links.
    List,
    /// Remove your link to a server (its URL, as `baton links` lists it).
    Revoke {
        /// The server's URL.
        #[arg(value_name = "SERVER")]
        server: String,
    },
}

/// `baton replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The conversation's id (`ep_…`, as `baton chat` prints it).
    #[arg(value_name = "EPISODE")]
    pub(crate) episode: String,
    /// Also print the tool payloads each turn stored, as JSON.
    #[arg(long)]
    pub(crate) bodies: bool,
    /// Print the conversation as stored, as one JSON document.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `baton eval`.
#[derive(Debug, Args)]
#[command(subcommand_precedence_over_arg = true)]
pub(crate) struct EvalArgs {
    /// Instead of running suites: turn a stored turn into a case.
    #[command(subcommand)]
    pub(crate) action: Option<EvalAction>,
    /// Suite files [default: every `evals/*.yaml` of the registry]
    #[arg(value_name = "FILE")]
    pub(crate) suites: Vec<PathBuf>,
    /// `routing` (the orchestrator's decision only: cheap) or `end-to-end` (the
    /// specialists run, and answers are checked too)
    #[arg(long, value_name = "MODE", default_value = "routing", value_parser = ["routing", "end-to-end"])]
    pub(crate) mode: String,
    /// Cases run at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub(crate) concurrency: usize,
    /// Run each suite N times (a model that is not deterministic): pass@N, pass^N, and
    /// each case stable, flaky or failing. The figures and the gate use the first run.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) repeat: u32,
    /// Print the results as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the results as JUnit XML (one test suite per eval suite), for CI.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Also write one self-contained HTML page: the figures, the confusion matrix as a heat
    /// map, and the failing cases with their routing records.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Gate the run on the committed baseline: a case that passed there and fails now, a
    /// lower routing accuracy, or an intent-switch pair below 95% fails with exit status 4.
    #[arg(long)]
    pub(crate) baseline: bool,
    /// Write this run as the new baseline.
    #[arg(long, conflicts_with = "baseline")]
    pub(crate) update_baseline: bool,
    /// The baseline file [default: the registry's `evals/baseline.json`]
    #[arg(long, value_name = "FILE")]
    pub(crate) baseline_file: Option<PathBuf>,
    /// Run the suites once per model and report them side by side, e.g.
    /// `--compare offline,llama-cpp` (each as `--model` takes it)
    #[arg(
        long,
        value_name = "MODELS",
        value_delimiter = ',',
        conflicts_with_all = ["baseline", "update_baseline", "json", "junit", "html"]
    )]
    pub(crate) compare: Vec<String>,
}

/// What `baton eval` can do besides running suites.
#[derive(Debug, Subcommand)]
pub(crate) enum EvalAction {
    /// Print a case that expects what a stored turn did (its conversation before it, its
    /// text, the route its routing record shows), to add to a suite.
    Capture(CaptureArgs),
}

/// `baton eval capture`.
#[derive(Debug, Args)]
pub(crate) struct CaptureArgs {
    /// The episode (the principal's).
    #[arg(value_name = "EPISODE")]
    pub(crate) episode: String,
    /// The turn's number in the episode [default: the last]
    #[arg(value_name = "TURN")]
    pub(crate) turn: Option<u64>,
    /// Earlier turns kept as the case's conversation.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub(crate) history: usize,
}

/// `baton compact`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["due", "episode"]))]
pub(crate) struct CompactArgs {
    /// Every episode marked due, longest due first.
    #[arg(long)]
    pub(crate) due: bool,
    /// This episode of the principal's, due or not.
    #[arg(long, value_name = "ID")]
    pub(crate) episode: Option<String>,
    /// With `--due`: at most this many episodes.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub(crate) max: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `baton chat`.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// The message (words are joined); without one, an interactive chat starts.
    #[arg(value_name = "MESSAGE")]
    pub(crate) message: Vec<String>,
    /// Print each event as one JSON line, and nothing else, on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// Continue this conversation.
    #[arg(long, value_name = "ID")]
    pub(crate) episode: Option<String>,
    /// Each turn must consult this specialist (repeat for several).
    #[arg(long, value_name = "ID")]
    pub(crate) must_consult: Vec<String>,
    /// How a Direct Line answer (`#specialist …`) is delivered: `strict` or `additive`
    /// [default: the orchestrator card's]
    #[arg(long, value_name = "MODE", value_parser = parse_direct_mode)]
    pub(crate) direct_line_mode: Option<DirectMode>,
}

fn parse_direct_mode(s: &str) -> Result<DirectMode, String> {
    match s {
        "strict" => Ok(DirectMode::Strict),
        "additive" => Ok(DirectMode::Additive),
        _ => Err("expected `strict` or `additive`".to_owned()),
    }
}

/// `baton serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8787]
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) addr: Option<String>,
    /// Log as JSON lines even on a terminal.
    #[arg(long)]
    pub(crate) log_json: bool,
}

/// `baton validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// Registry folder [default: the configured registry]
    #[arg(value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Fail when the eval suites miss a specialist's cases (a warning otherwise).
    #[arg(long)]
    pub(crate) strict: bool,
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
            Command::Links(args) => crate::links::run(&settings, &args).await,
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
            | Command::Links(_) => {}
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
