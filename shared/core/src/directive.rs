//! The Direct Line directive (D-21): `#<specialist> payload` at the start of the user's
//! own text asks that specialist directly, bypassing the orchestrator's routing.
//!
//! Parsing is pure and total: every input gives a [`Directive`], nothing panics. It is
//! applied to the user's text only, never to tool output, specialist answers or history.
//!
//! Where a directive may stand: at the start of the text, after optional whitespace and
//! optional channel mentions (`@tally #strategist …`). A prefix anywhere else
//! (`order #123`) is ordinary text. The token after the prefix is a run of letters,
//! digits, `-`, `_` and `.` that ends at whitespace or at the end of the text; anything
//! else (`#C++`, `#shop,`) is ordinary text, so hashtag-like writing is left alone.
//!
//! How a token resolves, against the orchestrator's specialists only:
//! 1. the exit word (case-insensitive) is [`Directive::Exit`], before any specialist;
//! 2. an exact match on an id (case-insensitive) or a normalised label (see
//!    [`normalise_label`]); one specialist matched is the answer, several are ambiguous;
//! 3. otherwise a prefix of at least two characters of an id or normalised label; one
//!    specialist is the answer, several are ambiguous;
//! 4. otherwise the token is unknown, except a token of digits only (`#1 priority`,
//!    `#123 never arrived`), which is ordinary text: ids start with a letter, and such
//!    text is far more often a number than a mistyped specialist.
//!
//! A backslash right before the prefix at that position (`\#shop`) makes it literal: the
//! text routes normally with that one backslash removed.

use serde::{Deserialize, Serialize};

/// What the user gets from a Direct Line turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectMode {
    /// The specialist's answer only; no orchestrator text at all.
    #[default]
    Strict,
    /// The specialist's answer, then optionally a separate, attributed orchestrator note.
    Additive,
}

impl DirectMode {
    /// The wire name (as serialized), for metric dimensions.
    pub fn as_str(self) -> &'static str {
        match self {
            DirectMode::Strict => "strict",
            DirectMode::Additive => "additive",
        }
    }
}

/// An orchestrator's Direct Line settings (the card's `direct_line:`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DirectLinePolicy {
    /// Directives are recognised at all (default `true`).
    pub enabled: bool,
    /// What starts a directive (default `#`); non-empty and without whitespace.
    pub prefix: String,
    /// Strict or additive (default strict).
    pub mode: DirectMode,
    /// `#<id>` alone opens a direct conversation that lasts across turns (default `true`).
    pub sticky: bool,
    /// The word that leaves a direct conversation: `#end` (default `end`).
    pub exit: String,
}

impl Default for DirectLinePolicy {
    fn default() -> Self {
        DirectLinePolicy {
            enabled: true,
            prefix: "#".to_owned(),
            mode: DirectMode::Strict,
            sticky: true,
            exit: "end".to_owned(),
        }
    }
}

/// A specialist a directive may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addressable<'a> {
    /// Card id.
    pub id: &'a str,
    /// Display label.
    pub label: &'a str,
}

/// What the start of the user's text asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// No directive: route normally. `text` is the user's text, with a leading escape
    /// backslash removed if there was one, otherwise unchanged.
    None {
        /// The text to route.
        text: String,
    },
    /// `#<id> payload`: ask that specialist.
    Ask {
        /// The specialist's id.
        agent_id: String,
        /// Everything after the token and the whitespace that follows it, byte for byte
        /// (a suffix of the user's text; never empty).
        payload: String,
    },
    /// `#<id>` with nothing after it.
    Open {
        /// The specialist's id.
        agent_id: String,
    },
    /// `#<exit>`: leave the direct conversation (any text after it is not used).
    Exit,
    /// The token names no specialist.
    Unknown {
        /// The token as typed (without the prefix).
        token: String,
    },
    /// The token fits several specialists.
    Ambiguous {
        /// The token as typed (without the prefix).
        token: String,
        /// Their ids, in declared order.
        candidates: Vec<String>,
    },
}

/// Parses the start of the user's text (see the module documentation for the rules).
///
/// An empty prefix recognises nothing: the loader rejects it, and a parser handed one
/// anyway must not turn every message into a directive.
pub fn parse(text: &str, policy: &DirectLinePolicy, agents: &[Addressable<'_>]) -> Directive {
    let literal = || Directive::None {
        text: text.to_owned(),
    };
    if !policy.enabled || policy.prefix.is_empty() {
        return literal();
    }
    let prefix = policy.prefix.as_str();
    let at = directive_start(text, prefix);
    let rest = &text[at..];
    // The escape is checked first so that it also works for a prefix starting with `\`.
    if is_escaped(rest, prefix) {
        return Directive::None {
            text: remove_byte(text, at),
        };
    }
    let Some(after) = rest.strip_prefix(prefix) else {
        return literal();
    };
    let token_len = after.find(|c| !is_token_char(c)).unwrap_or(after.len());
    let (token, tail) = after.split_at(token_len);
    if token.is_empty() || tail.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return literal();
    }
    let payload = tail.trim_start();
    match resolve(token, &policy.exit, agents) {
        Resolution::Exit => Directive::Exit,
        Resolution::One(id) if payload.is_empty() => Directive::Open { agent_id: id },
        Resolution::One(id) => Directive::Ask {
            agent_id: id,
            payload: payload.to_owned(),
        },
        Resolution::Several(candidates) => Directive::Ambiguous {
            token: token.to_owned(),
            candidates,
        },
        Resolution::Nothing if token.bytes().all(|b| b.is_ascii_digit()) => literal(),
        Resolution::Nothing => Directive::Unknown {
            token: token.to_owned(),
        },
    }
}

/// A label as a directive matches it: lowercase, without whitespace, `-` or `_`
/// (`Tally assistant`, `tally-assistant` and `TallyAssistant` are all `tallyassistant`).
pub fn normalise_label(label: &str) -> String {
    label
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `word` could be typed as a directive token (non-empty; letters, digits, `-`,
/// `_`, `.`), e.g. an exit word.
pub fn is_token(word: &str) -> bool {
    !word.is_empty() && word.chars().all(is_token_char)
}

fn is_token_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.')
}

fn is_escaped(rest: &str, prefix: &str) -> bool {
    rest.strip_prefix('\\')
        .is_some_and(|after| after.starts_with(prefix))
}

/// `text` without the byte at `at` (always the one-byte `\`).
fn remove_byte(text: &str, at: usize) -> String {
    let mut out = String::with_capacity(text.len().saturating_sub(1));
    out.push_str(&text[..at]);
    out.push_str(&text[at + 1..]);
    out
}

/// Byte offset where a directive may stand: after leading whitespace and `@mention`s.
fn directive_start(text: &str, prefix: &str) -> usize {
    let mut at = 0;
    loop {
        let rest = &text[at..];
        at += rest.len() - rest.trim_start().len();
        let rest = &text[at..];
        // A prefix beginning with `@` is a directive, not a mention.
        if rest.starts_with(prefix) {
            return at;
        }
        let Some(name) = rest.strip_prefix('@') else {
            return at;
        };
        let name_len = name.find(char::is_whitespace).unwrap_or(name.len());
        if name_len == 0 {
            return at;
        }
        at += 1 + name_len;
    }
}

enum Resolution {
    Exit,
    One(String),
    Several(Vec<String>),
    Nothing,
}

fn resolve(token: &str, exit: &str, agents: &[Addressable<'_>]) -> Resolution {
    let lower = token.to_lowercase();
    if !exit.is_empty() && lower == exit.to_lowercase() {
        return Resolution::Exit;
    }
    let norm = normalise_label(token);
    let labels: Vec<String> = agents.iter().map(|a| normalise_label(a.label)).collect();
    let exact = matching(agents, |i, a| {
        a.id.to_lowercase() == lower || (!norm.is_empty() && labels[i] == norm)
    });
    if !exact.is_empty() {
        return one_or_several(exact);
    }
    let long_enough = |s: &str| s.chars().count() >= 2;
    let by_prefix = matching(agents, |i, a| {
        (long_enough(&lower) && a.id.to_lowercase().starts_with(&lower))
            || (long_enough(&norm) && labels[i].starts_with(&norm))
    });
    if by_prefix.is_empty() {
        Resolution::Nothing
    } else {
        one_or_several(by_prefix)
    }
}

/// Ids of the agents that match, in declared order, each once.
fn matching(
    agents: &[Addressable<'_>],
    matches: impl Fn(usize, &Addressable<'_>) -> bool,
) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (i, a) in agents.iter().enumerate() {
        if matches(i, a) && !ids.iter().any(|id| id == a.id) {
            ids.push(a.id.to_owned());
        }
    }
    ids
}

fn one_or_several(mut ids: Vec<String>) -> Resolution {
    if ids.len() == 1 {
        Resolution::One(ids.remove(0))
    } else {
        Resolution::Several(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const AGENTS: [Addressable<'static>; 5] = [
        Addressable {
            id: "shop",
            label: "Shopping",
        },
        Addressable {
            id: "support",
            label: "Support",
        },
        Addressable {
            id: "rewards",
            label: "Rewards",
        },
        Addressable {
            id: "strategist",
            label: "Savings strategist",
        },
        Addressable {
            id: "tally",
            label: "Tally assistant",
        },
    ];

    fn p(text: &str) -> Directive {
        parse(text, &DirectLinePolicy::default(), &AGENTS)
    }

    fn ask(id: &str, payload: &str) -> Directive {
        Directive::Ask {
            agent_id: id.to_owned(),
            payload: payload.to_owned(),
        }
    }

    fn none(text: &str) -> Directive {
        Directive::None {
            text: text.to_owned(),
        }
    }

    fn with_prefix(prefix: &str) -> DirectLinePolicy {
        DirectLinePolicy {
            prefix: prefix.to_owned(),
            ..DirectLinePolicy::default()
        }
    }

    #[test]
    fn an_id_and_a_payload_ask_that_specialist_with_the_payload_verbatim() {
        assert_eq!(
            p("#shop  find me  Coffee deals!  "),
            ask("shop", "find me  Coffee deals!  ")
        );
        assert_eq!(
            p("  #support\n\tmy receipt\nwon't scan"),
            ask("support", "my receipt\nwon't scan")
        );
    }

    #[test]
    fn an_id_alone_opens_a_conversation() {
        assert_eq!(
            p("#rewards"),
            Directive::Open {
                agent_id: "rewards".into()
            }
        );
        assert_eq!(
            p("  #rewards   \n"),
            Directive::Open {
                agent_id: "rewards".into()
            }
        );
    }

    #[test]
    fn the_exit_word_leaves_whatever_its_case() {
        assert_eq!(p("#end"), Directive::Exit);
        assert_eq!(p("#END thanks"), Directive::Exit);
        let custom = DirectLinePolicy {
            exit: "bye".into(),
            ..DirectLinePolicy::default()
        };
        assert_eq!(parse("#Bye", &custom, &AGENTS), Directive::Exit);
        assert_eq!(
            parse("#end", &custom, &AGENTS),
            Directive::Unknown {
                token: "end".into()
            }
        );
    }

    #[test]
    fn the_exit_word_is_checked_before_the_specialists() {
        let agents = [Addressable {
            id: "endurance",
            label: "Endurance",
        }];
        let policy = DirectLinePolicy::default();
        assert_eq!(parse("#end", &policy, &agents), Directive::Exit);
        assert_eq!(parse("#endu go", &policy, &agents), ask("endurance", "go"));
    }

    #[test]
    fn an_unknown_token_is_reported_as_typed() {
        assert_eq!(
            p("#travel book me a flight"),
            Directive::Unknown {
                token: "travel".into()
            }
        );
        assert_eq!(
            p("#Blessed"),
            Directive::Unknown {
                token: "Blessed".into()
            }
        );
    }

    #[test]
    fn a_number_after_the_prefix_is_ordinary_text() {
        for text in ["#1 priority: save money", "#123 never arrived", "#42"] {
            assert_eq!(p(text), none(text));
        }
    }

    #[test]
    fn a_prefix_shared_by_several_specialists_is_ambiguous_in_declared_order() {
        assert_eq!(
            p("#s hello"),
            Directive::Unknown { token: "s".into() },
            "one character is too short to be a prefix"
        );
        assert_eq!(
            p("#su help"),
            ask("support", "help"),
            "a unique prefix matches"
        );
        assert_eq!(
            p("#st where do I start"),
            ask("strategist", "where do I start")
        );
        let agents = [
            Addressable {
                id: "support",
                label: "Support",
            },
            Addressable {
                id: "sums",
                label: "Sums",
            },
        ];
        assert_eq!(
            parse("#su hi", &DirectLinePolicy::default(), &agents),
            Directive::Ambiguous {
                token: "su".into(),
                candidates: vec!["support".into(), "sums".into()],
            }
        );
    }

    #[test]
    fn an_exact_match_wins_over_prefixes() {
        let agents = [
            Addressable {
                id: "shopping-plus",
                label: "Shopping plus",
            },
            Addressable {
                id: "shop",
                label: "Shop",
            },
        ];
        assert_eq!(
            parse("#shop x", &DirectLinePolicy::default(), &agents),
            ask("shop", "x")
        );
    }

    #[test]
    fn an_id_equal_to_another_specialists_label_is_ambiguous() {
        let agents = [
            Addressable {
                id: "shop",
                label: "Deals",
            },
            Addressable {
                id: "deals",
                label: "Coupons",
            },
        ];
        assert_eq!(
            parse("#deals hi", &DirectLinePolicy::default(), &agents),
            Directive::Ambiguous {
                token: "deals".into(),
                candidates: vec!["shop".into(), "deals".into()],
            }
        );
    }

    #[test]
    fn ids_and_labels_match_whatever_the_case_and_separators() {
        for text in [
            "#TallyAssistant hi",
            "#tally-assistant hi",
            "#tally_assistant hi",
            "#TALLY hi",
        ] {
            assert_eq!(p(text), ask("tally", "hi"), "{text}");
        }
        assert_eq!(p("#Shopping hi"), ask("shop", "hi"));
        assert_eq!(p("#savings-strategist hi"), ask("strategist", "hi"));
        assert_eq!(p("#SAVINGS hi"), ask("strategist", "hi"), "label prefix");
    }

    #[test]
    fn an_escaped_prefix_is_literal_and_loses_only_its_backslash() {
        assert_eq!(p(r"\#shop is my hashtag"), none("#shop is my hashtag"));
        assert_eq!(p(r"  @tally \#shop \#x"), none(r"  @tally #shop \#x"));
        assert_eq!(
            p(r"\\#shop"),
            none(r"\\#shop"),
            "only a backslash right before"
        );
    }

    #[test]
    fn mentions_before_the_directive_are_skipped() {
        assert_eq!(
            p("@tally #strategist plan my month"),
            ask("strategist", "plan my month")
        );
        assert_eq!(p(" @tally  @bot\n#shop deals"), ask("shop", "deals"));
        assert_eq!(p("@tally"), none("@tally"));
        assert_eq!(p("@ #shop deals"), none("@ #shop deals"));
        assert_eq!(p("@tally#shop deals"), none("@tally#shop deals"));
    }

    #[test]
    fn a_prefix_anywhere_else_is_ordinary_text() {
        for text in [
            "order #123 never arrived",
            "ask #shop for deals",
            "hi @tally #shop",
            "x#shop",
        ] {
            assert_eq!(p(text), none(text));
        }
    }

    #[test]
    fn a_bare_or_spaced_or_punctuated_prefix_is_ordinary_text() {
        for text in [
            "#",
            "  #  ",
            "# shop deals",
            "#C++ help",
            "#shop, deals",
            "#!",
        ] {
            assert_eq!(p(text), none(text), "{text:?}");
        }
    }

    #[test]
    fn a_disabled_policy_never_finds_a_directive() {
        let off = DirectLinePolicy {
            enabled: false,
            ..DirectLinePolicy::default()
        };
        for text in ["#shop deals", r"\#shop", "#end"] {
            assert_eq!(parse(text, &off, &AGENTS), none(text));
        }
    }

    #[test]
    fn custom_prefixes_work_and_the_default_one_becomes_text() {
        let bangs = with_prefix("!!");
        assert_eq!(parse("!!shop deals", &bangs, &AGENTS), ask("shop", "deals"));
        assert_eq!(parse("#shop deals", &bangs, &AGENTS), none("#shop deals"));
        assert_eq!(parse(r"\!!shop", &bangs, &AGENTS), none("!!shop"));
        assert_eq!(parse("!shop", &bangs, &AGENTS), none("!shop"));

        let slash = with_prefix("/");
        assert_eq!(
            parse("/support help", &slash, &AGENTS),
            ask("support", "help")
        );
        assert_eq!(parse("/end", &slash, &AGENTS), Directive::Exit);

        let at = with_prefix("@");
        assert_eq!(
            parse("@shop deals", &at, &AGENTS),
            ask("shop", "deals"),
            "a prefix of @ is a directive, not a mention"
        );
    }

    #[test]
    fn an_empty_prefix_recognises_nothing() {
        let empty = with_prefix("");
        assert_eq!(parse("shop deals", &empty, &AGENTS), none("shop deals"));
    }

    #[test]
    fn no_specialists_means_every_token_is_unknown() {
        assert_eq!(
            parse("#shop x", &DirectLinePolicy::default(), &[]),
            Directive::Unknown {
                token: "shop".into()
            }
        );
    }

    #[test]
    fn the_policy_reads_from_yaml_with_defaults() {
        let p: DirectLinePolicy = serde_norway::from_str("mode: additive\n").unwrap();
        assert_eq!(p.mode, DirectMode::Additive);
        assert_eq!(p.prefix, "#");
        assert_eq!(p.exit, "end");
        assert!(p.enabled && p.sticky);
        assert!(serde_norway::from_str::<DirectLinePolicy>("prefx: '!'\n").is_err());
    }

    #[test]
    fn labels_normalise_and_tokens_are_checked() {
        assert_eq!(normalise_label("Tally  assistant"), "tallyassistant");
        assert_eq!(normalise_label("Tally-Assistant_2"), "tallyassistant2");
        assert!(is_token("end") && is_token("good.bye") && is_token("fertig"));
        assert!(!is_token("") && !is_token("good bye") && !is_token("bye!"));
    }

    fn mention() -> impl Strategy<Value = String> {
        "@[a-z0-9_]{1,6}[ \t\n]{1,2}"
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in any::<String>(), prefix in "\\PC{0,3}", exit in "\\PC{0,4}") {
            let policy = DirectLinePolicy { prefix, exit, ..DirectLinePolicy::default() };
            let _ = parse(&text, &policy, &AGENTS);
        }

        #[test]
        fn a_payload_is_a_byte_exact_suffix_of_the_text(
            lead in "[ \t\n]{0,3}",
            mentions in proptest::collection::vec(mention(), 0..3),
            token in "(shop|Support|REW|tally-assistant|strategist|[a-z]{1,6})",
            gap in "[ \t\n]{0,3}",
            rest in any::<String>(),
        ) {
            let text = format!("{lead}{}#{token}{gap}{rest}", mentions.concat());
            if let Directive::Ask { payload, .. } = p(&text) {
                prop_assert!(!payload.is_empty());
                prop_assert!(text.ends_with(&payload));
                prop_assert!(!payload.starts_with(char::is_whitespace));
            }
        }

        #[test]
        fn text_not_starting_with_the_prefix_is_routed_unchanged(
            lead in "[ \t\n]{0,3}",
            mentions in proptest::collection::vec(mention(), 0..3),
            body in "[^#@\\\\\\s]\\PC*",
        ) {
            let text = format!("{lead}{}{body}", mentions.concat());
            prop_assert_eq!(p(&text), none(&text));
        }

        #[test]
        fn an_escaped_directive_loses_exactly_one_backslash(
            lead in "[ \t\n]{0,3}",
            rest in any::<String>(),
        ) {
            let text = format!("{lead}\\#{rest}");
            prop_assert_eq!(p(&text), none(&format!("{lead}#{rest}")));
        }

        #[test]
        fn a_disabled_policy_returns_any_text_unchanged(text in any::<String>()) {
            let off = DirectLinePolicy { enabled: false, ..DirectLinePolicy::default() };
            prop_assert_eq!(parse(&text, &off, &AGENTS), none(&text));
        }
    }
}
