//! `baton-bench --recall`: what long-term memory across conversations (D-43) costs.
//!
//! - **Search** over `--recall-memories` (10,000) memories of one principal in the
//!   embedded store (a real SQLite file in a temporary folder): the time to save them
//!   through `Runtime::memory().remember` (vector made, subject checked, cap kept), then
//!   the hybrid search `Runtime::memory().search(principal, query, &[], 5)` over a fixed
//!   set of queries, and `MemoryStore::search_text` and `search_vector` alone at the
//!   runtime's search depth. The memories are generated statements over many subjects,
//!   the same every run, with a few planted facts among them; each planted fact must come
//!   back in the top 5 of its query, or the run fails.
//! - **The reference turn** (`inproc.rs`'s turn: scripted model, heap journal) in
//!   alternating batches, with memory off (no memory store), with a memory store but the
//!   principal's memory off (one setting read), on with no memories, on with the 10,000
//!   in the embedded store, and on with the same 10,000 in `HeapMemory`; extraction after
//!   the turn off. CPU a turn and latency; what each adds over the turn without memory,
//!   paired by round.
//! - **Extraction's cost**: which of a fixed list of user messages the policy
//!   (`extract::worth_asking`) sends to the summarizer, and what one extraction call costs
//!   at the summarizer's prices in the shipped registry, its tokens counted as the offline
//!   model counts them (four characters a token) and its reply the offline model's; and
//!   what the `<memory>` block those searches put into the orchestrator's prompt costs at
//!   the orchestrator's prices.
//!
//! Targets are reported, never asserted: memory on should add under 5% to a turn's CPU.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use baton_core::Principal;
use baton_core::cost::cost_usd;
use baton_core::events::Event;
use baton_core::ports::memory::{Embedder, HashedWordsEmbedder, MemoryStore};
use baton_core::ports::model::{Model, ModelEvent, ModelRequest, TokenUsage};
use baton_core::privacy::{PrivacyGuard, PrivacyPolicy, PrivacyReceipt};
use baton_core::prompt::estimate_tokens;
use baton_core::recall::block::render;
use baton_core::recall::terms::query_terms;
use baton_core::recall::{MemoryFilter, MemoryKind, MemorySource, extract, subject_key};
use baton_inproc::HeapMemory;
use baton_local::embedded_store::{DATABASE_FILE, EmbeddedStore};
use baton_local::offline::OfflineModel;
use baton_runtime::registry_folder::{load_sources, read_sources};
use baton_runtime::{MemoryControl, MemorySettings, Runtime, RuntimeConfig, TurnRequest};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::Args;
use crate::inproc::{self, Sequential};
use crate::stats::{Summary, median, process_cpu, spread};
use crate::workload::{self, FAITHFUL, Latencies, SINGLE_PROMPT};

/// The principal whose memories are searched: `inproc::turn`'s, so that the reference
/// turn reads them.
const PRINCIPAL: &str = "bench-user";
/// Hits a search returns, as the memory skills and `baton memory search` ask.
const LIMIT: usize = 5;
/// Target: what memory on may add to a turn's CPU.
const TARGET_SHARE: f64 = 0.05;

/// How much a run does.
struct Sizes {
    memories: usize,
    searches: usize,
    /// Turns per batch of the kinds that search no memories (fewer than 1 ms a turn).
    turns: usize,
    /// Turns per batch of the kinds that search all the memories.
    turns_full: usize,
    /// Batches of each kind, in rotating order.
    rounds: usize,
}

impl Sizes {
    fn of(args: &Args) -> Sizes {
        if args.smoke {
            Sizes {
                memories: 300,
                searches: 60,
                turns: 3,
                turns_full: 3,
                rounds: 1,
            }
        } else {
            Sizes {
                memories: args.recall_memories,
                searches: 2_000,
                turns: 2_000,
                turns_full: 300,
                rounds: 5,
            }
        }
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Now, epoch ms, as the runtime's clock says it.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn principal() -> anyhow::Result<Principal> {
    Principal::new(PRINCIPAL).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Runs the recall benchmark and returns its JSON results.
pub(crate) async fn run(args: &Args) -> anyhow::Result<Value> {
    let sizes = Sizes::of(args);
    anyhow::ensure!(
        sizes.memories >= PLANTED.len() + 100,
        "--recall-memories must be at least {}",
        PLANTED.len() + 100
    );
    let workload_dir = tempfile::tempdir()?;
    workload::write(workload_dir.path(), FAITHFUL, Latencies::default())?;
    let full_dir = tempfile::tempdir()?;
    let full = EmbeddedStore::open(full_dir.path()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let empty_dir = tempfile::tempdir()?;
    let empty = EmbeddedStore::open(empty_dir.path()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let memories = generate(sizes.memories);

    let stores = Stores {
        full: &full,
        full_dir: full_dir.path(),
        empty: &empty,
    };
    let search = search(workload_dir.path(), &stores, &memories, &sizes).await?;
    let turn = turn_cost(workload_dir.path(), &stores, &memories, &sizes).await?;
    let known = known_subjects(&full).await?;
    let extraction = extraction(args, &known).await?;

    let mut out = json!({
        "mode": "recall",
        "version": env!("CARGO_PKG_VERSION"),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "config": {
            "smoke": args.smoke,
            "runtime": if args.current_thread { "tokio current_thread" } else { "tokio multi_thread, 2 workers" },
            "principal": PRINCIPAL,
            "memories": sizes.memories,
            "planted_facts": PLANTED.len(),
            "embedder": HashedWordsEmbedder::default().model(),
            "search_depth": MemorySettings::default().search_depth,
            "prompt_tokens": MemorySettings::default().prompt_tokens,
            "max_memories": MemorySettings::default().max_memories,
            "searches": sizes.searches,
            "queries": QUERIES.len(),
            "turns_per_batch": sizes.turns,
            "turns_per_batch_searching_all": sizes.turns_full,
            "rounds": sizes.rounds,
        },
        "search": search,
        "turn": turn,
        "extraction": extraction,
    });
    // The block is read by every orchestrator call of a turn, after the cache point: the
    // reference turn makes two (routing, composition).
    let block_tokens = out["search"]["block"]["tokens_mean"]
        .as_f64()
        .unwrap_or_default();
    let price = out["extraction"]["orchestrator_input_price_per_million"]
        .as_f64()
        .unwrap_or_default();
    out["block_cost"] = json!({
        "what": "the memory block's tokens (mean over the queries) at the shipped orchestrator's input price, uncached (it follows the cache point), once per orchestrator call; the reference turn makes two",
        "orchestrator_model": out["extraction"]["orchestrator_model"],
        "tokens_per_call": block_tokens,
        "usd_per_call": block_tokens * price / 1_000_000.0,
        "usd_per_turn_two_calls": 2.0 * block_tokens * price / 1_000_000.0,
    });
    let added = out["turn"]["added"]["on_full_embedded"]["cpu_share_of_off"].as_f64();
    out["target"] = json!({
        "what": "CPU a turn added by memory on with the memories in the embedded store, over the turn without memory",
        "target": format!("< {:.0}%", TARGET_SHARE * 100.0),
        "on_0": out["turn"]["added"]["on_0_embedded"]["cpu_share_of_off"],
        "on_full": added,
        "met": added.map(|a| a < TARGET_SHARE),
    });
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// The memories: generated statements over many subjects, the same every run.

/// A memory to save: kind, subject, statement.
#[derive(Debug, Clone)]
struct Statement {
    kind: MemoryKind,
    subject: String,
    text: String,
}

/// Facts a search must find, each with the question that should bring it back. Their
/// distinctive words appear nowhere else among the generated memories.
const PLANTED: &[(MemoryKind, &str, &str, &str)] = &[
    (
        MemoryKind::Fact,
        "dog",
        "My dog is called Biscuit",
        "what's my dog's name?",
    ),
    (
        MemoryKind::Fact,
        "locker code",
        "My locker code is 4417",
        "what was my locker code again?",
    ),
    (
        MemoryKind::Goal,
        "saving",
        "I'm saving for a Trek FX 2 bike",
        "how far am I from the bike I'm saving for?",
    ),
    (
        MemoryKind::Fact,
        "allergy",
        "I'm allergic to peanuts",
        "find me snacks that are safe with my peanut allergy",
    ),
    (
        MemoryKind::Finding,
        "receipt R-20421",
        "Receipt R-20421 was rejected because the photo was blurry",
        "what happened to receipt R-20421?",
    ),
    (
        MemoryKind::Fact,
        "home city",
        "I live in Leeds",
        "which city do I live in?",
    ),
    (
        MemoryKind::Preference,
        "coffee order",
        "My usual coffee is a flat white with oat milk",
        "order my usual coffee",
    ),
];

/// What a user asks that memory is searched for: the planted facts' questions, then
/// requests like those the reference turn and the shipped registry see.
const QUERIES: &[&str] = &[
    "Find me running shoes under 100",
    "any deals on coffee this week?",
    "my receipt didn't scan",
    "what's my points balance?",
    "I want a refund for order 1234",
    "gift ideas for my sister's birthday",
    "where can I buy oat milk?",
    "which store near me is open late?",
    "remind me what I'm saving for",
    "recipes without nuts for a party",
    "what size trainers does my son wear?",
    "book a delivery slot on Saturday morning",
    "cheap flights to Lisbon in May",
    "does my niece like chocolate?",
    "cancel my order ORD-5531",
    "what did I buy at GreenGrocer last month?",
    "help me plan meals for the week",
    "show me vegetarian options",
    "is there a discount on nappies?",
    "my voucher did not work at the till",
    "find a gluten-free birthday cake",
    "what's the weather like for my trip to Porto?",
    "any offers on red wine for the weekend?",
    "when is my mother's birthday?",
    "I need a new winter jacket",
    "how many points do I need for a free coffee?",
    "track my parcel",
    "compare prices for olive oil",
    "where does my brother live?",
    "what are my running goals?",
    "suggest a present for my colleague Priya",
    "can I return shoes bought online in store?",
    "my delivery was late again",
];

const RELATIONS: &[&str] = &[
    "sister",
    "brother",
    "mother",
    "father",
    "aunt",
    "uncle",
    "cousin",
    "niece",
    "nephew",
    "grandmother",
    "grandfather",
    "best friend",
    "colleague",
    "neighbour",
    "son",
    "daughter",
    "partner",
    "flatmate",
    "godson",
    "goddaughter",
    "stepbrother",
    "sister-in-law",
    "manager",
    "old teacher",
];

const NAMES: &[&str] = &[
    "Anna", "Ben", "Chloe", "Daniel", "Ella", "Finn", "Grace", "Harry", "Isla", "Jack", "Kate",
    "Leo", "Maya", "Noah", "Olivia", "Priya", "Quinn", "Ravi", "Sophie", "Tom", "Uma", "Victor",
    "Wendy", "Xavier", "Yasmin", "Zoe", "Aisha", "Bruno", "Carmen", "Dmitri", "Elif", "Farid",
    "Greta", "Hiro", "Ines", "Jonas", "Kemal", "Lena", "Marco", "Nadia", "Oscar", "Paula", "Rosa",
    "Samir", "Tara", "Ugo", "Vera", "Wei", "Yusuf", "Zara", "Amara", "Bilal", "Cora", "Dev",
    "Esme", "Felix", "Gus", "Hana", "Ivan", "Jude",
];

const CITIES: &[&str] = &[
    "Manchester",
    "Bristol",
    "Glasgow",
    "Cardiff",
    "York",
    "Brighton",
    "Norwich",
    "Dublin",
    "Lisbon",
    "Porto",
    "Madrid",
    "Valencia",
    "Lyon",
    "Berlin",
    "Hamburg",
    "Krakow",
    "Oslo",
    "Bergen",
    "Toronto",
    "Melbourne",
    "Nairobi",
    "Mumbai",
    "Osaka",
    "Seoul",
];

const FOODS: &[&str] = &[
    "shellfish",
    "gluten",
    "lactose",
    "eggs",
    "soy",
    "sesame",
    "strawberries",
    "kiwi",
    "mustard",
    "celery",
    "walnuts",
    "almonds",
    "wheat",
    "tomatoes",
];

const HOBBIES: &[&str] = &[
    "chess",
    "climbing",
    "knitting",
    "jazz",
    "football",
    "gardening",
    "photography",
    "board games",
    "baking",
    "tennis",
    "swimming",
    "painting",
    "vinyl records",
    "crosswords",
    "yoga",
    "sailing",
    "birdwatching",
    "pottery",
];

const GARMENTS: &[&str] = &[
    "running shoes",
    "trainers",
    "jeans",
    "shirts",
    "jackets",
    "boots",
    "dresses",
    "gloves",
    "hats",
    "school shoes",
    "pyjamas",
    "swimsuits",
];

const SIZES: &[&str] = &[
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    "10",
    "11",
    "38",
    "40",
    "42",
    "44",
    "small",
    "medium",
    "large",
    "extra large",
];

const PRODUCTS: &[&str] = &[
    "coffee beans",
    "green tea",
    "oat milk",
    "sourdough bread",
    "olive oil",
    "basmati rice",
    "dark chocolate",
    "greek yoghurt",
    "cheddar",
    "free-range eggs",
    "nappies",
    "dog food",
    "cat litter",
    "washing powder",
    "red wine",
    "sparkling water",
    "granola",
    "peanut-free muesli",
    "tofu",
    "salmon fillets",
    "avocados",
    "bananas",
    "pasta",
    "tinned tomatoes",
    "honey",
    "orange juice",
    "frozen peas",
    "porridge oats",
    "almond butter",
    "hummus",
    "toothpaste",
    "shampoo",
    "batteries",
    "light bulbs",
    "bin bags",
    "kitchen roll",
];

const STORES: &[&str] = &[
    "FreshMart",
    "GreenGrocer",
    "ValueStore",
    "CornerShop",
    "MegaMart",
    "the farmers market",
    "QuickBuy",
    "HomeBase",
    "the pharmacy on King Street",
    "the bakery by the station",
    "BulkBarn",
    "the online shop",
];

const DAYS: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

const GOAL_ITEMS: &[&str] = &[
    "new laptop",
    "holiday in Greece",
    "wedding",
    "car",
    "deposit on a flat",
    "sofa",
    "camera",
    "piano",
    "kitchen",
    "tent",
    "gaming console",
    "e-reader",
    "espresso machine",
    "garden shed",
];

const ACTIVITIES: &[&str] = &[
    "run",
    "swim",
    "cook at home",
    "read",
    "cycle to work",
    "meditate",
    "go to the gym",
    "walk 10,000 steps",
    "practise Spanish",
    "stretch",
];

const OUTCOMES: &[&str] = &["rejected", "approved", "credited", "refunded", "declined"];

const REASONS: &[&str] = &[
    "the total was cut off",
    "it was older than 30 days",
    "the store was not a partner",
    "it was a duplicate",
    "the points were added",
    "the items matched an offer",
];

const THINGS: &[&str] = &[
    "car",
    "front door",
    "bedroom",
    "kitchen",
    "phone case",
    "bike helmet",
    "raincoat",
    "suitcase",
    "umbrella",
    "sofa",
];

const COLOURS: &[&str] = &[
    "red", "navy", "green", "yellow", "grey", "white", "black", "orange", "teal", "purple",
];

const PETS: &[&str] = &["cat", "rabbit", "parrot", "hamster", "tortoise", "goldfish"];

/// splitmix64: small, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// One generated statement.
fn one(rng: &mut Rng) -> Statement {
    let (kind, subject, text) = match rng.below(14) {
        0 | 1 => {
            let (r, n) = (rng.pick(RELATIONS), rng.pick(NAMES));
            let (d, m) = (1 + rng.below(28), rng.pick(MONTHS));
            (
                MemoryKind::Fact,
                format!("{r} {n} birthday"),
                format!("My {r} {n}'s birthday is on {d} {m}"),
            )
        }
        2 => {
            let (r, n, c) = (rng.pick(RELATIONS), rng.pick(NAMES), rng.pick(CITIES));
            (
                MemoryKind::Fact,
                format!("{r} {n} home"),
                format!("My {r} {n} lives in {c}"),
            )
        }
        3 => {
            let (r, n, f) = (rng.pick(RELATIONS), rng.pick(NAMES), rng.pick(FOODS));
            (
                MemoryKind::Fact,
                format!("{r} {n} allergy"),
                format!("My {r} {n} cannot eat {f}"),
            )
        }
        4 => {
            let (r, n, h) = (rng.pick(RELATIONS), rng.pick(NAMES), rng.pick(HOBBIES));
            (
                MemoryKind::Fact,
                format!("{r} {n} hobby"),
                format!("My {r} {n} is really into {h}"),
            )
        }
        5 => {
            let (r, n, g, s) = (
                rng.pick(RELATIONS),
                rng.pick(NAMES),
                rng.pick(GARMENTS),
                rng.pick(SIZES),
            );
            (
                MemoryKind::Fact,
                format!("{r} {n} {g} size"),
                format!("My {r} {n} wears {g} in size {s}"),
            )
        }
        6 | 7 => {
            let (p, s, d) = (rng.pick(PRODUCTS), rng.pick(STORES), rng.pick(DAYS));
            (
                MemoryKind::Preference,
                format!("{p} at {s}"),
                format!("I buy {p} at {s}, usually on {d}"),
            )
        }
        8 => {
            let (p, c) = (rng.pick(PRODUCTS), rng.pick(COLOURS));
            let brand = format!(
                "{}{}",
                rng.pick(NAMES),
                rng.pick(&["'s", " & Co", " Organic"])
            );
            (
                MemoryKind::Preference,
                format!("{p} brand {brand}"),
                format!("For {p} I prefer {brand}, the one in the {c} packet"),
            )
        }
        9 => {
            let (i, m) = (rng.pick(GOAL_ITEMS), rng.pick(MONTHS));
            let (amount, year) = (100 * (3 + rng.below(60)), 2027 + rng.below(4));
            (
                MemoryKind::Goal,
                format!("goal {i} {year}"),
                format!("Putting aside {amount} pounds for a {i} by {m} {year}"),
            )
        }
        10 => {
            let (a, times, m) = (rng.pick(ACTIVITIES), 1 + rng.below(6), rng.pick(MONTHS));
            (
                MemoryKind::Goal,
                format!("goal {a} from {m}"),
                format!("Trying to {a} {times} times a week from {m} on"),
            )
        }
        11 | 12 => {
            let id = 10_000 + rng.below(89_999);
            let (s, o, why) = (rng.pick(STORES), rng.pick(OUTCOMES), rng.pick(REASONS));
            let (d, m) = (1 + rng.below(28), rng.pick(MONTHS));
            if rng.below(2) == 0 {
                (
                    MemoryKind::Finding,
                    format!("receipt R-{id}"),
                    format!("Receipt R-{id} from {s} was {o} on {d} {m}: {why}"),
                )
            } else {
                let p = rng.pick(PRODUCTS);
                (
                    MemoryKind::Finding,
                    format!("order ORD-{id}"),
                    format!("Order ORD-{id} of {p} from {s} was {o} on {d} {m}"),
                )
            }
        }
        _ => {
            if rng.below(2) == 0 {
                let (t, c) = (rng.pick(THINGS), rng.pick(COLOURS));
                let since = 2010 + rng.below(16);
                (
                    MemoryKind::Fact,
                    format!("{t} colour {since}"),
                    format!("My {t} has been {c} since {since}"),
                )
            } else {
                let (p, n, a) = (rng.pick(PETS), rng.pick(NAMES), 1 + rng.below(15));
                (
                    MemoryKind::Fact,
                    format!("{p} {n}"),
                    format!("We have a {p} called {n}, {a} years old"),
                )
            }
        }
    };
    Statement {
        kind,
        subject,
        text,
    }
}

/// `n` statements with distinct subjects (each one a current memory): the planted facts
/// spread among generated ones.
fn generate(n: usize) -> Vec<Statement> {
    let mut rng = Rng(0x5eed_0f4e_ca11);
    let mut seen: HashSet<String> = PLANTED.iter().map(|p| subject_key(p.1)).collect();
    let mut out = Vec::with_capacity(n);
    let generated = n.saturating_sub(PLANTED.len());
    while out.len() < generated {
        let s = one(&mut rng);
        if seen.insert(subject_key(&s.subject)) {
            out.push(s);
        }
    }
    // Planted at even steps through the save order, not all first or last.
    let step = (generated / PLANTED.len()).max(1);
    for (i, (kind, subject, text, _)) in PLANTED.iter().enumerate().rev() {
        let at = (i * step + step / 2).min(out.len());
        out.insert(
            at,
            Statement {
                kind: *kind,
                subject: (*subject).to_owned(),
                text: (*text).to_owned(),
            },
        );
    }
    out
}

// ---------------------------------------------------------------------------------------
// Search.

/// How one kind of turn is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// No memory store: the turn as `inproc.rs` measures it.
    None,
    /// A memory store, the principal's memory off (the deployment's default off, no
    /// setting of their own): one setting read a turn.
    Off,
    /// On: a setting read, a full-text search and a vector search before routing.
    On,
}

/// The reference turn's runtime (`inproc::build`'s) with memory as `setup` says, in
/// `store`.
fn reference(
    dir: &Path,
    setup: Setup,
    store: Option<Arc<dyn MemoryStore>>,
) -> anyhow::Result<Runtime> {
    let config = RuntimeConfig {
        memory: MemorySettings {
            on_by_default: setup == Setup::On,
            // What a turn costs before its answer; extraction is measured apart.
            extract_after_turn: false,
            ..MemorySettings::default()
        },
        ..RuntimeConfig::default()
    };
    inproc::build_with(dir, config, |builder| match (setup, store) {
        (Setup::Off | Setup::On, Some(store)) => {
            builder.memory(store, Arc::new(HashedWordsEmbedder::default()))
        }
        _ => builder,
    })
}

/// Saves `memories` for the principal through the runtime, one after another; the save
/// times.
async fn save_all(rt: &Runtime, memories: &[Statement]) -> anyhow::Result<(Vec<Duration>, f64)> {
    let principal = principal()?;
    let control = rt.memory();
    let mut times = Vec::with_capacity(memories.len());
    let cpu0 = process_cpu();
    for m in memories {
        let t0 = Instant::now();
        let (_, saved) = control
            .remember(
                &principal,
                m.kind,
                &m.subject,
                &m.text,
                MemorySource::default(),
            )
            .await?;
        times.push(t0.elapsed());
        if !matches!(
            saved,
            baton_core::recall::Saved::New {
                replaced: None,
                ref evicted,
            } if evicted.is_empty()
        ) {
            bail!("saving {:?} did not add a memory: {saved:?}", m.subject);
        }
    }
    let cpu = process_cpu().saturating_sub(cpu0);
    Ok((times, ms(cpu)))
}

fn save_json(times: &[Duration], cpu_ms: f64) -> Value {
    let n = times.len();
    let wall: Duration = times.iter().sum();
    let tenth = (n / 10).max(1);
    let mean_of = |xs: &[Duration]| ms(xs.iter().sum::<Duration>()) / xs.len().max(1) as f64;
    json!({
        "memories": n,
        "wall_s": round(wall.as_secs_f64(), 3),
        "memories_per_s": round(n as f64 / wall.as_secs_f64().max(1e-9), 1),
        "cpu_ms_per_memory": round(cpu_ms / n.max(1) as f64, 4),
        "latency": Summary::of(times),
        "mean_ms_first_tenth": round(mean_of(&times[..tenth]), 4),
        "mean_ms_last_tenth": round(mean_of(&times[n - tenth..]), 4),
    })
}

/// Latency and CPU of `searches` calls of `call`, cycling through `queries` queries (each
/// called once before).
async fn timed<F, Fut>(
    queries: usize,
    searches: usize,
    mut call: F,
) -> anyhow::Result<(Summary, f64, Vec<usize>)>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<usize>>,
{
    // Every query once first: the statements prepared, the pages read.
    for i in 0..queries {
        call(i).await?;
    }
    let mut times = Vec::with_capacity(searches);
    let mut hits = Vec::with_capacity(searches);
    let cpu0 = process_cpu();
    for i in 0..searches {
        let t0 = Instant::now();
        let n = call(i % queries.max(1)).await?;
        times.push(t0.elapsed());
        hits.push(n);
    }
    let cpu = ms(process_cpu().saturating_sub(cpu0)) / searches.max(1) as f64;
    Ok((Summary::of(&times), cpu, hits))
}

fn searched_json(latency: Summary, cpu_ms: f64, hits: &[usize]) -> Value {
    let n = hits.len().max(1) as f64;
    json!({
        "latency": latency,
        "cpu_ms_per_search": round(cpu_ms, 4),
        "hits_mean": round(hits.iter().sum::<usize>() as f64 / n, 2),
        "searches_with_hits_share": round(hits.iter().filter(|h| **h > 0).count() as f64 / n, 3),
    })
}

/// The two embedded stores: one with the principal's memories, one with none.
struct Stores<'a> {
    full: &'a EmbeddedStore,
    full_dir: &'a Path,
    empty: &'a EmbeddedStore,
}

/// What one memory read costs on an empty store, call by call: the fixed part of a turn's
/// memory (each is a hop to a blocking thread and a SQLite read).
async fn empty_store(
    workload_dir: &Path,
    store: &EmbeddedStore,
    searches: usize,
) -> anyhow::Result<Value> {
    let principal = principal()?;
    let rt = reference(workload_dir, Setup::On, Some(Arc::new(store.clone())))?;
    let control = rt.memory();
    let filter = MemoryFilter::current(now_ms());
    let depth = MemorySettings::default().search_depth;
    let query = SINGLE_PROMPT;
    let terms = query_terms(query);
    let vector = HashedWordsEmbedder::default()
        .embed(&[query])
        .await?
        .pop()
        .context("no vector")?;
    let (principal, control, filter, terms, vector) =
        (&principal, &control, &filter, &terms, &vector);
    let setting = timed(1, searches, |_| async move {
        Ok(usize::from(store.setting(principal).await?.is_some()))
    })
    .await?;
    let text = timed(1, searches, |_| async move {
        Ok(store
            .search_text(principal, terms, filter, depth)
            .await?
            .len())
    })
    .await?;
    let by_vector = timed(1, searches, |_| async move {
        Ok(store
            .search_vector(principal, vector, filter, depth)
            .await?
            .len())
    })
    .await?;
    let hybrid = timed(1, searches, |_| async move {
        Ok(control.search(principal, query, &[], LIMIT).await?.len())
    })
    .await?;
    Ok(json!({
        "what": format!("each call {searches} times on an empty embedded store, for {query:?}"),
        "setting": searched_json(setting.0, setting.1, &setting.2),
        "search_text": searched_json(text.0, text.1, &text.2),
        "search_vector": searched_json(by_vector.0, by_vector.1, &by_vector.2),
        "hybrid": searched_json(hybrid.0, hybrid.1, &hybrid.2),
    }))
}

async fn search(
    workload_dir: &Path,
    stores: &Stores<'_>,
    memories: &[Statement],
    sizes: &Sizes,
) -> anyhow::Result<Value> {
    let (store, store_dir) = (stores.full, stores.full_dir);
    let shared: Arc<dyn MemoryStore> = Arc::new(store.clone());
    let rt = reference(workload_dir, Setup::On, Some(shared))?;
    let principal = principal()?;
    let (times, cpu) = save_all(&rt, memories).await?;
    let saved = save_json(&times, cpu);
    let now = now_ms();
    let current = store
        .list(&principal, &MemoryFilter::current(now), usize::MAX)
        .await?
        .len();
    anyhow::ensure!(
        current == memories.len(),
        "{current} current memories after saving {}",
        memories.len()
    );
    let mib = |name: &str| {
        std::fs::metadata(store_dir.join(name))
            .ok()
            .map(|m| round(m.len() as f64 / (1024.0 * 1024.0), 2))
    };
    let (file_mib, log_mib) = (mib(DATABASE_FILE), mib(&format!("{DATABASE_FILE}-wal")));

    // Each planted fact comes back in the top 5 of its question.
    let control = rt.memory();
    let mut planted = Vec::new();
    for (_, subject, _, query) in PLANTED {
        let found = control.search(&principal, query, &[], LIMIT).await?;
        let key = subject_key(subject);
        let rank = found.iter().position(|f| f.memory.subject == key);
        let Some(rank) = rank else {
            bail!(
                "the planted fact {subject:?} is not in the top {LIMIT} for {query:?}: {:?}",
                found.iter().map(|f| &f.memory.text).collect::<Vec<_>>()
            );
        };
        let hit = &found[rank];
        planted.push(json!({
            "query": query,
            "subject": key,
            "rank": rank + 1,
            "text_rank": hit.text_rank,
            "similarity": hit.similarity.map(|s| round(f64::from(s), 3)),
        }));
    }
    let queries: Vec<&str> = PLANTED
        .iter()
        .map(|p| p.3)
        .chain(QUERIES.iter().copied())
        .collect();

    let n = queries.len();
    // The hybrid search as users and the memory skills call it.
    let (mut from_text, mut from_vector, mut from_both) = (0usize, 0usize, 0usize);
    let mut examples = BTreeMap::new();
    for q in &queries {
        let found = control.search(&principal, q, &[], LIMIT).await?;
        for f in &found {
            match (f.text_rank, f.similarity) {
                (Some(_), Some(_)) => from_both += 1,
                (Some(_), None) => from_text += 1,
                _ => from_vector += 1,
            }
        }
        examples.insert(
            (*q).to_owned(),
            found
                .iter()
                .map(|f| f.memory.text.clone())
                .collect::<Vec<_>>(),
        );
    }
    let block = block_sizes(&control, &principal, &queries).await?;
    let hybrid = {
        let (control, principal, queries) = (&control, &principal, &queries);
        timed(n, sizes.searches, |i| async move {
            let q = queries[i];
            Ok(control.search(principal, q, &[], LIMIT).await?.len())
        })
        .await?
    };

    // The store's two searches alone, at the depth the runtime asks them for.
    let depth = MemorySettings::default().search_depth;
    let filter = MemoryFilter::current(now);
    let embedder = HashedWordsEmbedder::default();
    let terms: Vec<Vec<String>> = queries.iter().map(|q| query_terms(q)).collect();
    let mut vectors = Vec::with_capacity(queries.len());
    for q in &queries {
        vectors.extend(embedder.embed(&[*q]).await?);
    }
    let text = {
        let (terms, filter, principal) = (&terms, &filter, &principal);
        timed(n, sizes.searches, |i| async move {
            let t = &terms[i];
            Ok(store.search_text(principal, t, filter, depth).await?.len())
        })
        .await?
    };
    let vector = {
        let (vectors, filter, principal) = (&vectors, &filter, &principal);
        timed(n, sizes.searches, |i| async move {
            let v = &vectors[i];
            Ok(store
                .search_vector(principal, v, filter, depth)
                .await?
                .len())
        })
        .await?
    };
    let embed = {
        let (embedder, queries) = (&embedder, &queries);
        timed(n, sizes.searches, |i| async move {
            Ok(embedder.embed(&[queries[i]]).await?.len())
        })
        .await?
    };
    Ok(json!({
        "store": "embedded (baton_local EmbeddedStore: a SQLite file in a temporary folder, FTS5 with Porter stemming, vectors as blobs compared one by one)",
        "memories": memories.len(),
        "file_mib": file_mib,
        "write_ahead_log_mib": log_mib,
        "save": saved,
        "queries": queries.len(),
        "planted": planted,
        "block": block,
        "hybrid": {
            "what": format!("Runtime::memory().search(principal, query, &[], {LIMIT}): query terms, one vector, search_text and search_vector at depth {depth} at once, fused"),
            "figures": searched_json(hybrid.0, hybrid.1, &hybrid.2),
            "hits_by_source": { "text_only": from_text, "vector_only": from_vector, "both": from_both },
            "examples": examples,
        },
        "search_text_alone": {
            "what": format!("MemoryStore::search_text at depth {depth}, the terms made beforehand"),
            "figures": searched_json(text.0, text.1, &text.2),
        },
        "search_vector_alone": {
            "what": format!("MemoryStore::search_vector at depth {depth}, the vector made beforehand"),
            "figures": searched_json(vector.0, vector.1, &vector.2),
        },
        "embed_alone": {
            "what": "HashedWordsEmbedder::embed of the query",
            "figures": searched_json(embed.0, embed.1, &embed.2),
        },
        "empty_store": empty_store(workload_dir, stores.empty, sizes.searches).await?,
    }))
}

/// The memory block each query would put into the orchestrator's prompt: rendered as a
/// turn renders it (`block::render` within `prompt_tokens`) from the first `search_depth`
/// of its fused hits.
async fn block_sizes(
    control: &MemoryControl,
    principal: &Principal,
    queries: &[&str],
) -> anyhow::Result<Value> {
    let settings = MemorySettings::default();
    let guard = PrivacyGuard::new(&PrivacyPolicy::default());
    let (mut tokens, mut lines) = (Vec::new(), Vec::new());
    let mut reference_turn = None;
    for q in queries {
        let found = control
            .search(principal, q, &[], settings.search_depth)
            .await?;
        let memories: Vec<&baton_core::recall::Memory> = found.iter().map(|f| &f.memory).collect();
        let mut receipt = PrivacyReceipt::default();
        let block = render(&memories, settings.prompt_tokens, &guard, &mut receipt);
        let t = if block.ids.is_empty() {
            0
        } else {
            estimate_tokens(&block.text)
        };
        if *q == SINGLE_PROMPT {
            reference_turn = Some(json!({ "tokens": t, "memories": block.ids.len() }));
        }
        tokens.push(t as f64);
        lines.push(block.ids.len() as f64);
    }
    let n = queries.len().max(1) as f64;
    Ok(json!({
        "what": format!("the <memory> block of the orchestrator's prompt for each query: block::render within {} tokens of the first {} fused hits", settings.prompt_tokens, settings.search_depth),
        "tokens_mean": round(tokens.iter().sum::<f64>() / n, 1),
        "tokens_max": tokens.iter().copied().fold(0.0, f64::max),
        "memories_mean": round(lines.iter().sum::<f64>() / n, 2),
        "queries_with_a_block_share": round(tokens.iter().filter(|t| **t > 0.0).count() as f64 / n, 3),
        "reference_turn": reference_turn,
    }))
}

// ---------------------------------------------------------------------------------------
// The reference turn with memory.

/// The kinds of turn compared, in the JSON's names.
const KINDS: &[&str] = &[
    "off_no_store",
    "store_principal_off",
    "on_0_embedded",
    "on_full_embedded",
    "on_full_heap",
];

/// The memories the orchestrator was given in one turn (their subjects).
async fn given(rt: &Runtime) -> anyhow::Result<Vec<String>> {
    let request = TurnRequest::new(principal()?, SINGLE_PROMPT);
    let mut stream = rt
        .run_turn(request)
        .await
        .map_err(|e| anyhow::anyhow!("turn refused: {e}"))?;
    let mut subjects = Vec::new();
    while let Some(e) = stream.next().await {
        if let Event::AgentsConsulted { memories, .. } = &e.event {
            subjects = memories.iter().map(|m| m.subject.clone()).collect();
        }
    }
    Ok(subjects)
}

async fn turn_cost(
    workload_dir: &Path,
    stores: &Stores<'_>,
    memories: &[Statement],
    sizes: &Sizes,
) -> anyhow::Result<Value> {
    let (full, empty) = (stores.full, stores.empty);
    let full_store: Arc<dyn MemoryStore> = Arc::new(full.clone());
    let heap_store: Arc<dyn MemoryStore> = Arc::new(HeapMemory::new());
    let runtimes = [
        reference(workload_dir, Setup::None, None)?,
        reference(workload_dir, Setup::Off, Some(full_store.clone()))?,
        reference(workload_dir, Setup::On, Some(Arc::new(empty.clone())))?,
        reference(workload_dir, Setup::On, Some(full_store))?,
        reference(workload_dir, Setup::On, Some(heap_store))?,
    ];
    // The heap's runtime saves its own copy of the memories.
    let (heap_times, heap_cpu) = save_all(&runtimes[KINDS.len() - 1], memories).await?;
    let mut given_by_kind = serde_json::Map::new();
    for (kind, rt) in KINDS.iter().zip(&runtimes) {
        // Warm-up, and what the orchestrator is given.
        for _ in 0..sizes.turns.min(20) {
            inproc::turn(rt, SINGLE_PROMPT).await?;
        }
        given_by_kind.insert((*kind).to_owned(), json!(given(rt).await?));
    }
    let mut batches: Vec<Vec<Sequential>> = KINDS.iter().map(|_| Vec::new()).collect();
    for r in 0..sizes.rounds {
        // Each round in another order, so that no kind always runs first or last.
        for k in 0..KINDS.len() {
            let i = (k + r) % KINDS.len();
            let n = if KINDS[i].starts_with("on_full") {
                sizes.turns_full
            } else {
                sizes.turns
            };
            let run = inproc::sequential(&runtimes[i], SINGLE_PROMPT, n, FAITHFUL).await?;
            batches[i].push(run);
        }
    }
    let cpu_us = |s: &Sequential| s.cpu_ms_per_turn * 1000.0;
    let p50_ms = |s: &Sequential| s.latency.p50_ms;
    let p99_ms = |s: &Sequential| s.latency.p99_ms;
    let mut kinds = serde_json::Map::new();
    let mut added = serde_json::Map::new();
    let off_cpu = median(&batches[0].iter().map(cpu_us).collect::<Vec<_>>());
    for (i, kind) in KINDS.iter().enumerate() {
        let over =
            |f: &dyn Fn(&Sequential) -> f64| spread(&batches[i].iter().map(f).collect::<Vec<_>>());
        kinds.insert(
            (*kind).to_owned(),
            json!({
                "cpu_us_per_turn": over(&cpu_us),
                "latency_p50_ms": over(&p50_ms),
                "latency_p99_ms": over(&p99_ms),
                "memories_given": given_by_kind.get(*kind),
            }),
        );
        if i == 0 {
            continue;
        }
        // Paired by round: the machine's speed moves from minute to minute, and a round's
        // batches run close together.
        let diff = |f: &dyn Fn(&Sequential) -> f64| {
            median(
                &batches[i]
                    .iter()
                    .zip(&batches[0])
                    .map(|(b, a)| f(b) - f(a))
                    .collect::<Vec<_>>(),
            )
        };
        let cpu = diff(&cpu_us);
        added.insert(
            (*kind).to_owned(),
            json!({
                "cpu_us": round(cpu, 2),
                "cpu_share_of_off": if off_cpu > 0.0 { round(cpu / off_cpu, 4) } else { 0.0 },
                "latency_p50_ms": round(diff(&p50_ms), 4),
                "latency_p99_ms": round(diff(&p99_ms), 4),
            }),
        );
    }
    Ok(json!({
        "what": "the reference turn of inproc.rs (scripted model, heap journal, zero latency), single intent, one turn after another; each batch's CPU is the process's CPU over its turns (blocking threads included); batches of each kind in rotating order",
        "prompt": SINGLE_PROMPT,
        "kinds": {
            "off_no_store": "no memory store (the turn as inproc.rs measures it)",
            "store_principal_off": "the embedded store with all the memories, memory off for the principal (one setting read)",
            "on_0_embedded": "on, an empty embedded store",
            "on_full_embedded": "on, all the memories in the embedded store",
            "on_full_heap": "on, the same memories in HeapMemory",
        },
        "heap_save": save_json(&heap_times, heap_cpu),
        "by_kind": kinds,
        "added": added,
    }))
}

// ---------------------------------------------------------------------------------------
// Extraction.

/// Messages a user sends, and whether each says something about them that stays true (a
/// person's judgement, to set the policy's choices against).
const MESSAGES: &[(&str, bool)] = &[
    ("Find me running shoes under 100", false),
    ("any deals on coffee this week?", false),
    ("my receipt didn't scan", false),
    ("What's my points balance?", false),
    ("I want a refund for order 1234", false),
    ("where can I buy oat milk near me", false),
    ("show me the cheapest nappies", false),
    ("is FreshMart open late tonight?", false),
    ("can you compare these two laptops", false),
    ("I need help with a missing delivery", false),
    ("find me a birthday present for my sister", false),
    ("thanks, that's great", false),
    ("hi there", false),
    ("how do I redeem my points?", false),
    ("it's receipt R-20421 if that helps", false),
    ("any of those at FreshMart?", false),
    ("book me a delivery slot for Saturday morning", false),
    ("cancel my last order", false),
    ("do you remember my dog's name?", false),
    ("I have a question about my bill", false),
    ("I'm looking for gluten-free pasta", false),
    ("I'd like to return these headphones", false),
    ("My dog is called Biscuit", true),
    ("I'm vegetarian, so no meat deals please", true),
    ("I live in Leeds", true),
    ("I'm saving for a Trek FX 2", true),
    ("remember that my locker code is 4417", true),
    ("I prefer oat milk in my coffee", true),
    ("my sister's birthday is on 14 March", true),
    ("I'm allergic to peanuts", true),
    ("I usually shop at FreshMart on Saturdays", true),
    ("we have two cats, Miso and Tofu", true),
    ("I work nights, so deliveries after 6pm are best", true),
    ("call me Sam", true),
    ("I don't eat pork", true),
    (
        "My daughter starts school in September, find me lunch boxes",
        true,
    ),
    ("I hate coriander, find me salsa without it", true),
    ("I've moved to Bristol, update my nearest store", true),
    ("our baby is due in June, what do we need?", true),
    (
        "my son plays football on Sundays, any boots on offer?",
        true,
    ),
];

/// The subjects an extraction request lists for a principal with many memories: the
/// newest [`extract::KNOWN_SUBJECTS`], as extraction reads them.
async fn known_subjects(store: &EmbeddedStore) -> anyhow::Result<Vec<String>> {
    let now = now_ms();
    Ok(store
        .list(
            &principal()?,
            &MemoryFilter::current(now),
            extract::KNOWN_SUBJECTS,
        )
        .await?
        .into_iter()
        .map(|m| m.subject)
        .collect())
}

/// One extraction call's tokens: its prompt as the offline model counts it (four
/// characters a token over the system text and the message), its output the offline
/// model's reply; the usage the offline model reported, to check the count; the reply.
async fn call_tokens(
    model: &OfflineModel,
    request: &ModelRequest,
) -> anyhow::Result<(TokenUsage, TokenUsage, String)> {
    let mut prompt = String::new();
    for block in &request.system {
        prompt.push_str(&block.text);
    }
    for message in &request.messages {
        prompt.push_str(message.user_text().unwrap_or_default());
    }
    let mut reply = String::new();
    let mut reported = TokenUsage::default();
    let mut stream = model.stream(request);
    while let Some(event) = stream.next().await {
        match event? {
            ModelEvent::TextDelta(t) => reply.push_str(&t),
            ModelEvent::Usage(u) => reported.add(&u),
            _ => {}
        }
    }
    let counted = TokenUsage {
        input: estimate_tokens(&prompt),
        output: estimate_tokens(&reply),
        ..TokenUsage::default()
    };
    Ok((counted, reported, reply))
}

async fn extraction(args: &Args, known: &[String]) -> anyhow::Result<Value> {
    let root = crate::memory::registry_root(args);
    let connectors = baton_connectors::default_connectors(&root);
    let registry = read_sources(&root)
        .and_then(|s| load_sources(&s, &connectors, &Default::default()))
        .map_err(|e| anyhow::anyhow!("the registry {} is not valid: {e}", root.display()))?;
    let registry = Arc::new(registry);
    let entry = registry
        .entry(None)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .clone();
    // The summarizer compaction uses, else the orchestrator's own model: as extraction
    // picks it.
    let spec = entry
        .orchestration
        .as_ref()
        .and_then(|o| o.memory.as_ref())
        .map_or_else(|| entry.model.clone(), |p| p.summarizer.clone());
    let model = OfflineModel::new(registry.clone());

    let mut asked = Vec::new();
    let (mut requests_asked, mut statements_missed) = (Vec::new(), Vec::new());
    // Tokens of each asked message's call: a new user (no known subjects), and a user
    // whose request lists the newest 40 of their subjects.
    let (mut new_user, mut many) = (Vec::new(), Vec::new());
    // The reply a language model would write as the instructions ask: one statement for a
    // message that states something lasting, an empty list for the rest.
    let mut written = Vec::new();
    let mut calls = Vec::new();
    for (message, states) in MESSAGES {
        let ask = extract::worth_asking(message, &[]);
        match (ask, *states) {
            (true, false) => requests_asked.push(*message),
            (false, true) => statements_missed.push(*message),
            _ => {}
        }
        if !ask {
            continue;
        }
        asked.push(*message);
        let reply = if *states {
            let subject: Vec<String> = baton_core::recall::terms::content_words(message)
                .take(2)
                .collect();
            json!({ "memories": [{ "kind": "fact", "subject": subject.join(" "), "text": message, "expires_in_days": null }] })
        } else {
            json!({ "memories": [] })
        };
        written.push(estimate_tokens(&reply.to_string()));
        for (i, (known, into)) in [(&[][..], &mut new_user), (known, &mut many)]
            .into_iter()
            .enumerate()
        {
            let text = extract::request_text(message, &[], known);
            let request = extract::request(&entry.id, &spec, text);
            let (counted, reported, reply) = call_tokens(&model, &request).await?;
            anyhow::ensure!(
                counted.input == reported.input && counted.output == reported.output,
                "the offline model reported {reported:?} for a call counted as {counted:?}"
            );
            if i == 0 {
                calls.push(json!({
                    "message": message,
                    "input_tokens": counted.input,
                    "output_tokens": counted.output,
                    "reply": reply,
                }));
            }
            into.push(counted);
        }
    }
    let share = asked.len() as f64 / MESSAGES.len() as f64;
    let prices = spec.prices;
    let priced = |calls: &[TokenUsage]| {
        let n = calls.len().max(1) as f64;
        let written_output = written.iter().sum::<u64>() as f64 / n;
        let per_call_written = calls
            .iter()
            .zip(&written)
            .map(|(c, w)| {
                let usage = TokenUsage { output: *w, ..*c };
                cost_usd(&usage, &prices)
            })
            .sum::<f64>()
            / n;
        let input = calls.iter().map(|c| c.input).sum::<u64>() as f64 / n;
        let output = calls.iter().map(|c| c.output).sum::<u64>() as f64 / n;
        let costs: Vec<f64> = calls.iter().map(|c| cost_usd(c, &prices)).collect();
        let per_call = costs.iter().sum::<f64>() / n;
        // The instructions are the request's cache point: read from the cache, they cost
        // the cache price instead.
        let cached = estimate_tokens(extract::INSTRUCTIONS) as f64;
        let per_call_cached = per_call - cached * (prices.input - prices.cache_read) / 1_000_000.0;
        // The reply at its bound (`max_output_tokens`) instead of the offline model's.
        let bound = TokenUsage {
            input: input.round() as u64,
            output: 700,
            ..TokenUsage::default()
        };
        json!({
            "input_tokens_mean": round(input, 1),
            "output_tokens_mean": round(output, 1),
            "usd_per_call": per_call,
            "usd_per_call_instructions_cached": per_call_cached,
            "usd_per_call_output_at_bound": cost_usd(&bound, &prices),
            "written_reply_output_tokens_mean": round(written_output, 1),
            "usd_per_call_written_reply": per_call_written,
            "usd_per_turn_written_reply": per_call_written * share,
            "usd_per_turn": per_call * share,
            "usd_per_1000_turns": per_call * share * 1000.0,
        })
    };
    let orchestrator = &entry.model;
    Ok(json!({
        "orchestrator_model": &*orchestrator.key,
        "orchestrator_input_price_per_million": orchestrator.prices.input,
        "what": "extract::worth_asking(message, no specialist answers) over a fixed list of user messages; for each message asked, extract::request + request_text, its prompt counted with baton_core::prompt::estimate_tokens over the system text and the message (as the offline model counts it), its output the offline model's reply (and, apart, the reply a language model would write: one statement for each message that states something, an empty list for the rest), priced with the summarizer's prices by baton_core::cost::cost_usd",
        "summarizer": &*spec.key,
        "prices_per_million": { "input": prices.input, "output": prices.output, "cache_read": prices.cache_read },
        "messages": MESSAGES.len(),
        "stating_something_lasting": MESSAGES.iter().filter(|m| m.1).count(),
        "asked": asked.len(),
        "asked_share": round(share, 4),
        "requests_asked": requests_asked,
        "statements_not_asked": statements_missed,
        "instructions_tokens": estimate_tokens(extract::INSTRUCTIONS),
        "max_output_tokens": 700,
        "new_user": priced(&new_user),
        "with_40_known_subjects": priced(&many),
        "calls": calls,
    }))
}

// ---------------------------------------------------------------------------------------
// The table.

/// The figures as text.
pub(crate) fn table(r: &Value) -> String {
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let s = &r["search"];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "recall: {} memories of one principal in the embedded store (file {:.1} MiB, log {:.1} MiB), {} queries",
        s["memories"],
        f(&s["file_mib"]),
        f(&s["write_ahead_log_mib"]),
        s["queries"]
    );
    let sv = &s["save"];
    let _ = writeln!(
        out,
        "  saved through Runtime::memory().remember: {:.0} memories/s ({:.3} ms CPU each; p50 {:.3} / p99 {:.3} ms; first tenth {:.3}, last tenth {:.3} ms)",
        f(&sv["memories_per_s"]),
        f(&sv["cpu_ms_per_memory"]),
        f(&sv["latency"]["p50_ms"]),
        f(&sv["latency"]["p99_ms"]),
        f(&sv["mean_ms_first_tenth"]),
        f(&sv["mean_ms_last_tenth"])
    );
    let planted: Vec<String> = s["planted"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| format!("{} #{}", p["subject"].as_str().unwrap_or("?"), p["rank"]))
                .collect()
        })
        .unwrap_or_default();
    let _ = writeln!(out, "  planted facts found: {}", planted.join(", "));
    let b = &s["block"];
    let bc = &r["block_cost"];
    let _ = writeln!(
        out,
        "  the <memory> block a query brings: {:.0} tokens and {:.1} memories on average ({:.0}% of queries have one); at {}'s input price ${:.6} an orchestrator call, ${:.6} a two-call turn",
        f(&b["tokens_mean"]),
        f(&b["memories_mean"]),
        f(&b["queries_with_a_block_share"]) * 100.0,
        bc["orchestrator_model"].as_str().unwrap_or("?"),
        f(&bc["usd_per_call"]),
        f(&bc["usd_per_turn_two_calls"])
    );
    let _ = writeln!(
        out,
        "  {:<34} {:>9} {:>9} {:>9} {:>11} {:>6}",
        "search (ms)", "p50", "p99", "max", "CPU/search", "hits"
    );
    for (name, key) in [
        ("hybrid (Runtime::memory().search)", "hybrid"),
        ("MemoryStore::search_text", "search_text_alone"),
        ("MemoryStore::search_vector", "search_vector_alone"),
        ("the query's vector", "embed_alone"),
    ] {
        let g = &s[key]["figures"];
        let _ = writeln!(
            out,
            "  {:<34} {:>9.3} {:>9.3} {:>9.3} {:>11.3} {:>6.2}",
            name,
            f(&g["latency"]["p50_ms"]),
            f(&g["latency"]["p99_ms"]),
            f(&g["latency"]["max_ms"]),
            f(&g["cpu_ms_per_search"]),
            f(&g["hits_mean"])
        );
    }
    let e0 = &s["empty_store"];
    let _ = writeln!(
        out,
        "  on an empty store, CPU a call (ms): setting {:.4}, search_text {:.4}, search_vector {:.4}, hybrid {:.4}",
        f(&e0["setting"]["cpu_ms_per_search"]),
        f(&e0["search_text"]["cpu_ms_per_search"]),
        f(&e0["search_vector"]["cpu_ms_per_search"]),
        f(&e0["hybrid"]["cpu_ms_per_search"])
    );
    let t = &r["turn"];
    let _ = writeln!(
        out,
        "reference turn {:?}, {} turns a batch ({} when searching all), {} rounds (medians over rounds; added: paired by round):",
        t["prompt"].as_str().unwrap_or_default(),
        r["config"]["turns_per_batch"],
        r["config"]["turns_per_batch_searching_all"],
        r["config"]["rounds"]
    );
    let n = s["memories"].as_u64().unwrap_or_default();
    let labels = [
        "no memory store".to_owned(),
        "store, principal off".to_owned(),
        "on, 0, embedded".to_owned(),
        format!("on, {n}, embedded"),
        format!("on, {n}, HeapMemory"),
    ];
    let _ = writeln!(
        out,
        "  {:<22} {:>12} {:>20} {:>10} {:>10} {:>6}",
        "memory", "CPU µs/turn", "added", "p50 ms", "p99 ms", "given"
    );
    for (kind, label) in KINDS.iter().zip(&labels) {
        let k = &t["by_kind"][*kind];
        let a = &t["added"][*kind];
        let added = if a.is_null() {
            String::new()
        } else {
            format!(
                "{:+.1} ({:+.1}%)",
                f(&a["cpu_us"]),
                f(&a["cpu_share_of_off"]) * 100.0
            )
        };
        let _ = writeln!(
            out,
            "  {:<22} {:>12.1} {:>20} {:>10.4} {:>10.4} {:>6}",
            label,
            f(&k["cpu_us_per_turn"]["median"]),
            added,
            f(&k["latency_p50_ms"]["median"]),
            f(&k["latency_p99_ms"]["median"]),
            k["memories_given"].as_array().map_or(0, Vec::len)
        );
    }
    let tg = &r["target"];
    let _ = writeln!(
        out,
        "  target: memory on adds {} CPU a turn: {:+.1}% with 0 memories, {:+.1}% with {}: {}",
        tg["target"].as_str().unwrap_or_default(),
        f(&tg["on_0"]) * 100.0,
        f(&tg["on_full"]) * 100.0,
        s["memories"],
        match tg["met"].as_bool() {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "—",
        }
    );
    let e = &r["extraction"];
    let _ = writeln!(
        out,
        "extraction: {} of {} messages asked ({:.1}%); {} of the {} state something lasting; requests asked: {}; statements not asked: {}",
        e["asked"],
        e["messages"],
        f(&e["asked_share"]) * 100.0,
        e["stating_something_lasting"],
        e["messages"],
        e["requests_asked"].as_array().map_or(0, Vec::len),
        e["statements_not_asked"].as_array().map_or(0, Vec::len)
    );
    for (name, key) in [
        ("new user", "new_user"),
        ("40 known subjects", "with_40_known_subjects"),
    ] {
        let c = &e[key];
        let _ = writeln!(
            out,
            "  {name}: {:.0} + {:.0} tokens a call at {}'s prices: ${:.7} a call, ${:.8} a turn, ${:.5} per 1,000 turns",
            f(&c["input_tokens_mean"]),
            f(&c["output_tokens_mean"]),
            e["summarizer"].as_str().unwrap_or("?"),
            f(&c["usd_per_call"]),
            f(&c["usd_per_turn"]),
            f(&c["usd_per_1000_turns"])
        );
        let _ = writeln!(
            out,
            "    a written reply ({:.0} tokens): ${:.7} a call, ${:.8} a turn; instructions cached: ${:.7} a call; output at its bound (700): ${:.7} a call",
            f(&c["written_reply_output_tokens_mean"]),
            f(&c["usd_per_call_written_reply"]),
            f(&c["usd_per_turn_written_reply"]),
            f(&c["usd_per_call_instructions_cached"]),
            f(&c["usd_per_call_output_at_bound"])
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memories_are_the_same_every_run_and_each_subject_is_one() {
        let a = generate(2_000);
        let b = generate(2_000);
        assert_eq!(a.len(), 2_000);
        assert!(a.iter().zip(&b).all(|(x, y)| x.text == y.text));
        let subjects: HashSet<String> = a.iter().map(|s| subject_key(&s.subject)).collect();
        assert_eq!(subjects.len(), a.len());
        for (_, subject, text, _) in PLANTED {
            assert!(a.iter().any(|s| s.subject == *subject && s.text == *text));
        }
    }

    #[test]
    fn the_messages_mix_requests_and_statements() {
        assert!(MESSAGES.len() >= 30);
        let stating = MESSAGES.iter().filter(|m| m.1).count();
        assert!(stating >= 10 && MESSAGES.len() - stating >= 10);
    }
}
