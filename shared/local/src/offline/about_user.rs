//! What the user said about themselves, kept across every fold of a summary.
//!
//! A rolling summary keeps recent requests, so a name or a goal stated in the first turn
//! would be folded away after a few batches. First-person statements about the user's own
//! things ("my dog is called …", "I'm saving for …", "I have 12,000 points", "my budget is
//! …") are kept instead in their own words, one per subject: a newer statement of the same
//! subject replaces the older one, and past the cap the oldest subjects go first.
//!
//! The section is written as one line the next fold reads back ([`AboutUser::read_line`]):
//! each statement is recognised again to find its subject, and one that is not (a summary a
//! person edited) is still carried forward as it was.

use super::segment;

/// How the section's line starts.
const LABEL: &str = "About the user, in their words: ";
/// Statements kept at most.
const MAX_FACTS: usize = 12;
/// The section's length at most, in characters: the rest of the summary needs the room.
const MAX_CHARS: usize = 400;
/// One statement's length at most, in characters.
const STATEMENT_CHARS: usize = 100;

/// Nouns that make "my … is …" a statement about the user ("my budget is $800").
const OWN_NOUNS: &[&str] = &[
    "name", "budget", "goal", "target", "limit", "plan", "deadline", "birthday",
];
/// A word that ends a statement's value: what follows is another clause.
const CLAUSE_WORDS: &[&str] = &[
    "and", "but", "so", "because", "which", "though", "although", "while", "when", "if",
];
/// A word before "I …" or "my …" that makes it a question or a condition, not a statement
/// ("how many points do I have", "what if my budget is …").
const NOT_AFTER: &[&str] = &[
    "do", "does", "did", "can", "could", "would", "should", "will", "shall", "how", "what", "why",
    "where", "which", "whether", "if", "much", "many", "is", "are",
];
/// Words allowed between "I have" and the amount ("I have about 500 points").
const QUALIFIERS: &[&str] = &[
    "about", "around", "over", "nearly", "almost", "roughly", "exactly", "only", "just",
];
/// Words after an amount that are not what the amount counts ("I have $800 saved").
const NOT_UNITS: &[&str] = &[
    "in", "on", "of", "at", "left", "saved", "now", "to", "for", "from", "total",
];

/// One statement and the subject it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fact {
    /// What it is about ("dog", "budget", "saving", "have point"): one statement each.
    subject: String,
    /// The user's words.
    statement: String,
}

/// The user's statements about themselves, oldest first.
#[derive(Debug, Default)]
pub(super) struct AboutUser {
    facts: Vec<Fact>,
}

impl AboutUser {
    /// Reads a previous summary's section; `false` when `line` is not one.
    pub(super) fn read_line(&mut self, line: &str) -> bool {
        let Some(rest) = line.strip_prefix(LABEL) else {
            return false;
        };
        let rest = rest.trim().strip_suffix('.').unwrap_or(rest.trim());
        for piece in rest.split("; ").map(str::trim).filter(|p| !p.is_empty()) {
            let fact = facts_in(piece).into_iter().next().unwrap_or_else(|| Fact {
                subject: piece.to_lowercase(),
                statement: piece.to_owned(),
            });
            self.add(fact);
        }
        true
    }

    /// Notes the statements of one user message, in order.
    pub(super) fn note(&mut self, user_text: &str) {
        for fact in facts_in(user_text) {
            self.add(fact);
        }
    }

    /// The section's line, or `None` when the user said nothing about themselves.
    pub(super) fn line(&self) -> Option<String> {
        (!self.facts.is_empty()).then(|| render(&self.facts))
    }

    /// Adds `fact` as the newest, replacing its subject's older statement, and drops the
    /// oldest past the caps.
    fn add(&mut self, fact: Fact) {
        self.facts.retain(|f| f.subject != fact.subject);
        self.facts.push(fact);
        while self.facts.len() > MAX_FACTS
            || (self.facts.len() > 1 && render(&self.facts).chars().count() > MAX_CHARS)
        {
            self.facts.remove(0);
        }
    }
}

fn render(facts: &[Fact]) -> String {
    let statements: Vec<&str> = facts.iter().map(|f| f.statement.as_str()).collect();
    format!("{LABEL}{}.", statements.join("; "))
}

/// The statements about the user in `text`, each with its subject, in order (what
/// extraction keeps, D-43).
pub(super) fn statements(text: &str) -> Vec<(String, String)> {
    facts_in(text)
        .into_iter()
        .map(|f| (f.subject, f.statement))
        .collect()
}

/// A word of a clause: its byte span and its lowercase form without surrounding
/// punctuation.
struct Word {
    start: usize,
    end: usize,
    lower: String,
    /// A comma or other clause mark right after it.
    ends_clause: bool,
}

/// The statements about the user in `text`, in order.
fn facts_in(text: &str) -> Vec<Fact> {
    // One apostrophe, so "I’m" and "I'm" read alike.
    let text = text.replace('\u{2019}', "'");
    let mut out = Vec::new();
    for span in segment::split(&text) {
        let clause = span.of(&text);
        let words = words(clause);
        let question = clause.trim_end().ends_with('?');
        let mut k = 0;
        while k < words.len() {
            let after_ok = k == 0 || !NOT_AFTER.contains(&words[k - 1].lower.as_str());
            let found = if after_ok {
                statement_at(&words, k)
            } else {
                None
            };
            let Some((subject, value)) = found else {
                k += 1;
                continue;
            };
            let end = value_end(&words, value);
            // A question that runs to the end ("I want a refund?") states nothing.
            let asks = question && end == words.len();
            if end > value && !asks {
                let statement = shorten(&clause[words[k].start..words[end - 1].end]);
                out.push(Fact { subject, statement });
            }
            k = end.max(k + 1);
        }
    }
    out
}

fn words(clause: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut offset = 0;
    for raw in clause.split_inclusive(char::is_whitespace) {
        let start = offset;
        offset += raw.len();
        let token = raw.trim_end();
        if token.is_empty() {
            continue;
        }
        let keep = |c: char| c.is_alphanumeric() || matches!(c, '\'' | '$' | '€' | '£');
        let core = token.trim_end_matches(|c: char| !keep(c));
        let lead = core.len() - core.trim_start_matches(|c: char| !keep(c)).len();
        if core.len() == lead {
            continue;
        }
        out.push(Word {
            start: start + lead,
            end: start + core.len(),
            lower: core[lead..].to_lowercase(),
            ends_clause: token[core.len()..].contains([',', ':', '(', ')', '—', '–']),
        });
    }
    out
}

/// The subject of a statement starting at word `k`, and where its value starts.
fn statement_at(words: &[Word], k: usize) -> Option<(String, usize)> {
    let w = |i: usize| words.get(i).map_or("", |w| w.lower.as_str());
    match w(k) {
        "my" => my_statement(words, k),
        "i'm" => i_am(words, k + 1),
        "i" if w(k + 1) == "am" => i_am(words, k + 2),
        "i've" if w(k + 1) == "got" => amount(words, k + 2),
        "i've" if w(k + 1) == "been" && w(k + 2) == "saving" => saving(words, k + 3),
        "i" => match w(k + 1) {
            "want" => Some(("want".into(), k + 2)),
            "plan" if matches!(w(k + 2), "to" | "on") => Some(("plan".into(), k + 3)),
            "have" if w(k + 2) == "got" => amount(words, k + 3),
            "have" | "own" => amount(words, k + 2),
            "live" if w(k + 2) == "in" => Some(("home".into(), k + 3)),
            "work" if matches!(w(k + 2), "at" | "as" | "for") => Some(("work".into(), k + 3)),
            _ => None,
        },
        _ => None,
    }
}

/// "my X is/are called Y", "my X's name is Y", "my budget is Y", "my favourite X is Y".
fn my_statement(words: &[Word], k: usize) -> Option<(String, usize)> {
    // X is one to three words, then the verb.
    let verb = (k + 2..=k + 4)
        .take_while(|&j| j < words.len() && !words[j - 1].ends_clause)
        .find(|&j| matches!(words[j].lower.as_str(), "is" | "are"))?;
    let thing: Vec<&str> = words[k + 1..verb]
        .iter()
        .map(|w| w.lower.as_str())
        .collect();
    if matches!(
        words.get(verb + 1).map(|w| w.lower.as_str()),
        Some("called" | "named")
    ) {
        return Some((subject(&thing), verb + 2));
    }
    let last = thing.last()?.trim_end_matches("'s");
    let own = OWN_NOUNS.contains(&last) || matches!(thing[0], "favourite" | "favorite");
    own.then(|| (subject(&thing), verb + 1))
}

/// "my dog's name" is about the dog, as "my dog is called" is.
fn subject(thing: &[&str]) -> String {
    match thing {
        [owner @ .., "name"] if !owner.is_empty() => {
            owner.join(" ").trim_end_matches("'s").to_owned()
        }
        _ => thing.join(" "),
    }
}

/// After "I'm" / "I am": saving for, planning to, called.
fn i_am(words: &[Word], at: usize) -> Option<(String, usize)> {
    let w = |i: usize| words.get(i).map_or("", |w| w.lower.as_str());
    match w(at) {
        "saving" => saving(words, at + 1),
        "planning" | "hoping" if matches!(w(at + 1), "to" | "on") => Some(("plan".into(), at + 2)),
        "called" | "named" => Some(("name".into(), at + 1)),
        _ => None,
    }
}

/// After "saving": "for X", "up for X", "to X", "towards X".
fn saving(words: &[Word], at: usize) -> Option<(String, usize)> {
    let w = |i: usize| words.get(i).map_or("", |w| w.lower.as_str());
    let at = if w(at) == "up" { at + 1 } else { at };
    matches!(w(at), "for" | "to" | "towards" | "toward").then(|| ("saving".into(), at + 1))
}

/// After "I have" / "I own": an amount ("12,000 points", "$800"), its subject what it
/// counts, so a newer amount of the same thing replaces the old.
fn amount(words: &[Word], at: usize) -> Option<(String, usize)> {
    let w = |i: usize| words.get(i).map_or("", |w| w.lower.as_str());
    let number = if QUALIFIERS.contains(&w(at)) {
        at + 1
    } else {
        at
    };
    let n = w(number);
    if !n.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let money = n.starts_with(['$', '€', '£']);
    let unit = w(number + 1);
    let counts = !words[number].ends_clause
        && !unit.is_empty()
        && unit.chars().all(char::is_alphabetic)
        && !NOT_UNITS.contains(&unit)
        && !CLAUSE_WORDS.contains(&unit);
    let subject = if money {
        "have money".to_owned()
    } else if counts {
        format!("have {}", unit.trim_end_matches('s'))
    } else {
        "have".to_owned()
    };
    Some((subject, at))
}

/// One past the value's last word: it runs to the clause's end, a comma or a joining word.
fn value_end(words: &[Word], start: usize) -> usize {
    let mut end = start;
    while end < words.len() {
        if end > start && CLAUSE_WORDS.contains(&words[end].lower.as_str()) {
            break;
        }
        end += 1;
        if words[end - 1].ends_clause {
            break;
        }
    }
    end
}

/// The statement trimmed to [`STATEMENT_CHARS`] at a word boundary; "; " never appears in
/// one, so the section's line splits back into its statements.
fn shorten(statement: &str) -> String {
    let statement = statement.replace("; ", ", ");
    if statement.chars().count() <= STATEMENT_CHARS {
        return statement;
    }
    let cut: String = statement.chars().take(STATEMENT_CHARS).collect();
    let end = cut.rfind(' ').unwrap_or(cut.len());
    format!("{}…", &cut[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(text: &str) -> Vec<(String, String)> {
        facts_in(text)
            .into_iter()
            .map(|f| (f.subject, f.statement))
            .collect()
    }

    fn pair(subject: &str, statement: &str) -> (String, String) {
        (subject.to_owned(), statement.to_owned())
    }

    #[test]
    fn first_person_statements_are_recognised_with_their_subject() {
        assert_eq!(
            statements("Hi! My dog is called Biscuit and he loves treats."),
            [pair("dog", "My dog is called Biscuit")]
        );
        assert_eq!(
            statements("so I'm saving for a Trek FX 2, any tips?"),
            [pair("saving", "I'm saving for a Trek FX 2")]
        );
        assert_eq!(
            statements("I have 12,000 points. my budget is $800 a month"),
            [
                pair("have point", "I have 12,000 points"),
                pair("budget", "my budget is $800 a month"),
            ]
        );
        assert_eq!(
            statements("my name is Sam; my cat’s name is Tofu"),
            [
                pair("name", "my name is Sam"),
                pair("cat", "my cat's name is Tofu"),
            ]
        );
        assert_eq!(
            statements("I am planning to visit Lisbon in May"),
            [pair("plan", "I am planning to visit Lisbon in May")]
        );
    }

    #[test]
    fn questions_and_other_peoples_things_are_not_statements() {
        for text in [
            "how many points do I have?",
            "what if my budget is $500?",
            "my receipt didn't scan",
            "is my plan to buy coffee in bulk realistic?",
            "I want a refund?",
            "your name is Baton",
        ] {
            assert_eq!(statements(text), [], "{text}");
        }
    }

    #[test]
    fn a_newer_statement_of_a_subject_replaces_the_older_one() {
        let mut about = AboutUser::default();
        about.note("my budget is $800");
        about.note("my dog is called Biscuit");
        about.note("my budget is $650 now");
        assert_eq!(
            about.line().as_deref(),
            Some(
                "About the user, in their words: my dog is called Biscuit; my budget is $650 now."
            )
        );
    }

    #[test]
    fn the_section_reads_back_as_it_was_written() {
        let mut about = AboutUser::default();
        about.note("I have 12,000 points and I'm saving for a Trek FX 2");
        let line = about.line().unwrap();
        let mut again = AboutUser::default();
        assert!(again.read_line(&line));
        assert_eq!(again.line(), Some(line.clone()));
        // A statement it does not recognise is still carried forward.
        let edited = line.replace("points;", "points; likes hiking;");
        let mut edited_again = AboutUser::default();
        assert!(edited_again.read_line(&edited));
        assert_eq!(edited_again.line(), Some(edited));
        assert!(!again.read_line("Names: Biscuit."));
    }

    #[test]
    fn past_the_caps_the_oldest_statements_go_first() {
        let mut about = AboutUser::default();
        for i in 0..20 {
            about.note(&format!("my pet{i} is called Name{i}"));
        }
        let line = about.line().unwrap();
        assert!(line.chars().count() <= MAX_CHARS, "{line}");
        assert!(line.contains("Name19") && !line.contains("pet0 "), "{line}");
        assert!(about.facts.len() <= MAX_FACTS);
        // A long statement is shortened, never split.
        let mut long = AboutUser::default();
        long.note(&format!("I want {}", "a very long thing ".repeat(20)));
        let line = long.line().unwrap();
        assert!(line.contains('…') && !line.contains("; "), "{line}");
    }
}
