//! A turn that waits for the user (D-36): what it asks, the work it keeps while it waits,
//! and the user's reply. The waiting work is carried in the episode's state, so it is as
//! durable as a committed turn on every store, and a crash while waiting loses nothing.

use crate::principal::hex_onto;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::consulted::AgentStatus;
use crate::message::{Message, ToolResultStatus};

/// How long an interruption waits before it counts as declined, by default: a day.
pub const DEFAULT_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// The tool a specialist asks the user a question with (a card's `asks_user: true`).
pub const ASK_USER_TOOL: &str = "ask_user";

/// The question an `ask_user` call asks: its non-blank `question` argument.
pub fn question_of(args: &Value) -> Option<&str> {
    args.get("question")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty())
}

/// What the turn waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterruptionKind {
    /// The user's approval of one tool call.
    Approval,
    /// The user's answer to a specialist's question.
    Question,
    /// The user connecting their own account to a server that acts for them (D-37): the
    /// reply says they did (approve) or will not (decline).
    AccountLink,
}

impl InterruptionKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            InterruptionKind::Approval => "approval",
            InterruptionKind::Question => "question",
            InterruptionKind::AccountLink => "account_link",
        }
    }
}

/// What the user is asked, as the stream and the record show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interruption {
    /// Its id, which the reply names.
    pub id: String,
    /// What it waits for.
    pub kind: InterruptionKind,
    /// The specialist that asks.
    pub agent_id: String,
    /// Its label.
    pub label: String,
    /// The tool it would call (`ask_user` for a question).
    pub tool: String,
    /// What the user is asked in plain words (after the privacy guard): the action to
    /// approve, or the question.
    pub action: String,
    /// The call's exact arguments (after the privacy guard).
    pub args: Value,
    /// SHA-256 of the arguments as they will run (compact JSON), so the record says which
    /// exact call was approved.
    pub args_sha256: String,
    /// When it was asked, epoch ms.
    pub created_ms: u64,
    /// When it counts as declined, epoch ms.
    pub expires_ms: u64,
    /// Where the user connects their account, for an account link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkAsk>,
}

/// An account link the user is asked to make (D-37).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkAsk {
    /// The server to connect to, as the connector names it (the link's key).
    pub server: String,
    /// The sign-in page to open. Its `state` is sealed: it names the principal and holds
    /// what the sign-in is finished with, readable only by this runtime.
    pub url: String,
    /// Sign-ins this call asked for before this one (for the same server): a server that
    /// asks again after each (more scope, every time) is not followed past
    /// [`MAX_SIGN_INS`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub asked_before: u32,
}

/// Sign-ins one call may ask the user for, across the resumes they take: the first and
/// two step-ups to more scope, as a connector steps up at most twice within one request.
pub const MAX_SIGN_INS: u32 = 3;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The user's answer: a decision on an approval, or the words that answer a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Run the call.
    Approve,
    /// Do not run it, or (to a question) do not answer.
    Decline,
    /// The answer to a question.
    Text(String),
}

impl Answer {
    /// How the record names it: `approve`, `decline` or `answered` (never the answer's
    /// words, which the record does not keep).
    pub fn as_str(&self) -> &'static str {
        match self {
            Answer::Approve => "approve",
            Answer::Decline => "decline",
            Answer::Text(_) => "answered",
        }
    }

    /// Whether `words` only say that it is done ("done", "yes", "I signed in"): meant as
    /// the answer to an account link, though without its code.
    pub fn says_done(words: &str) -> bool {
        const DONE: &[&str] = &[
            "done",
            "connected",
            "linked",
            "signed in",
            "i did",
            "yes",
            "y",
            "ok",
            "okay",
            "i signed in",
            "finished",
        ];
        DONE.contains(&normalized(words).as_str())
    }

    /// The answer to `interruption` in the user's own words, as a face that only carries
    /// text takes it (the next message of a conversation): to an approval, a yes or a no;
    /// to a question, any words; to an account link, the code its sign-in page showed
    /// ([`link_code`]) or a no.
    ///
    /// # Errors
    /// The words do not answer it.
    pub fn from_words(interruption: &Interruption, words: &str) -> Result<Answer, ReplyError> {
        let words = words.trim();
        match interruption.kind {
            InterruptionKind::Question if words.is_empty() => Err(ReplyError::NeedsAnswer),
            InterruptionKind::Question => Ok(Answer::Text(words.to_owned())),
            InterruptionKind::AccountLink if link_code(words).is_some() => {
                Ok(Answer::Text(link_code(words).unwrap_or_default()))
            }
            InterruptionKind::Approval | InterruptionKind::AccountLink => {
                let said = normalized(words);
                const YES: &[&str] = &[
                    "yes",
                    "y",
                    "approve",
                    "approved",
                    "ok",
                    "okay",
                    "go ahead",
                    "confirm",
                    "yes please",
                    "do it",
                ];
                const NO: &[&str] = &[
                    "no",
                    "n",
                    "decline",
                    "declined",
                    "cancel",
                    "stop",
                    "dont",
                    "no thanks",
                    "dont do it",
                ];
                let linking = interruption.kind == InterruptionKind::AccountLink;
                if NO.contains(&said.as_str()) {
                    Ok(Answer::Decline)
                } else if linking {
                    // Saying "done" is not enough: only the code proves who signed in.
                    Err(ReplyError::NeedsCode)
                } else if YES.contains(&said.as_str()) {
                    Ok(Answer::Approve)
                } else {
                    Err(ReplyError::NeedsDecision)
                }
            }
        }
    }
}

/// `words` in lower case, without punctuation, single-spaced.
fn normalized(words: &str) -> String {
    let said: String = words
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .to_lowercase();
    said.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The digits of a sign-in's confirmation code, as long, in `words` ("482 913", "the
/// code is 482-913"): `None` when they hold no such code.
pub fn link_code(words: &str) -> Option<String> {
    let digits: String = words.chars().filter(char::is_ascii_digit).collect();
    (digits.len() == LINK_CODE_DIGITS).then_some(digits)
}

/// How many digits a sign-in's confirmation code has (D-37).
pub const LINK_CODE_DIGITS: usize = 6;

/// The user's reply to an interruption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// The interruption answered.
    pub interruption_id: String,
    /// The answer.
    pub answer: Answer,
}

/// What the record keeps of an answered interruption: who answered what, when, over which
/// exact arguments, and through which face.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// The interruption.
    pub interruption_id: String,
    /// The turn that waited.
    pub waited_turn_id: String,
    /// The turn whose message started the waiting work (the first of a chain of resumes).
    #[serde(default)]
    pub origin_turn_id: String,
    /// What it waited for.
    pub kind: InterruptionKind,
    /// The specialist that asked.
    pub agent_id: String,
    /// The tool it asked about (`ask_user` for a question).
    pub tool: String,
    /// `approve`, `decline` or `answered`; `expired` when nobody answered in time (which
    /// counts as declined).
    pub answer: String,
    /// SHA-256 of the call's exact arguments.
    pub args_sha256: String,
    /// Who answered (the principal).
    pub by: String,
    /// The face the answer came through (`api`, `chat`, `a2a`, `ag-ui`, `openai`, `mcp`).
    pub face: String,
    /// When it was asked, epoch ms.
    pub asked_ms: u64,
    /// When it was answered (or found expired), epoch ms.
    pub answered_ms: u64,
}

impl AnswerRecord {
    /// The record of `awaiting`'s interruption, answered with `answer` by `by` through
    /// `face` at `now_ms`.
    pub fn new(awaiting: &Awaiting, answer: &str, by: &str, face: &str, now_ms: u64) -> Self {
        let i = &awaiting.interruption;
        AnswerRecord {
            interruption_id: i.id.clone(),
            waited_turn_id: awaiting.turn_id.clone(),
            origin_turn_id: awaiting.origin().to_owned(),
            kind: i.kind,
            agent_id: i.agent_id.clone(),
            tool: i.tool.clone(),
            answer: answer.to_owned(),
            args_sha256: i.args_sha256.clone(),
            by: by.to_owned(),
            face: face.to_owned(),
            asked_ms: i.created_ms,
            answered_ms: now_ms,
        }
    }
}

/// A call of the waiting specialist's last reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldCall {
    /// The model's call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments, as the call was checked.
    pub input: Value,
    /// Its answer once it has one (it ran, or the user decided); `None` while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<HeldAnswer>,
    /// The account link it waits for: it ran, and its server needs the user's own
    /// sign-in first (D-37).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkAsk>,
    /// What its service asked the user mid-call: it ran, did not act, and is made again
    /// with the answer (D-36).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<crate::input::InputAsked>,
}

/// A held call's answer, as the specialist will read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldAnswer {
    /// Outcome.
    pub status: ToolResultStatus,
    /// Content (JSON).
    pub content: Value,
}

/// A specialist stopped at a call that needs the user, with all it had done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitingAgent {
    /// Its conversation up to the reply that made the calls (that reply not included).
    pub messages: Vec<Message>,
    /// The reply's text.
    pub reply_text: String,
    /// The reply's calls, in order.
    pub calls: Vec<HeldCall>,
    /// What it had said so far (its answer text builds on it).
    pub text: String,
    /// Tool calls it made so far.
    pub tool_calls: u32,
    /// How its data calls went so far: `ok`, `partial`, `unavailable` (as text: the
    /// interruption module stays below the tool results in the core's layering).
    pub data: Vec<String>,
    /// Time it had run, ms.
    pub duration_ms: u64,
    /// It is a remote agent that asked the user something (A2A's `INPUT_REQUIRED`): its one
    /// held call stands for the question, and the answer is its next message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remote: bool,
}

impl WaitingAgent {
    /// The first call still waiting for the user.
    pub fn next_held(&self) -> Option<&HeldCall> {
        self.calls.iter().find(|c| c.answer.is_none())
    }
}

/// One sub-agent's part of a waiting turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedJob {
    /// Card id.
    pub agent_id: String,
    /// The orchestrator's tool-use id.
    pub call_id: String,
    /// The query it was given.
    pub query: String,
    /// Prior context it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_context: Option<String>,
    /// Card-declared extra arguments.
    #[serde(default)]
    pub extra: serde_json::Map<String, Value>,
    /// How it ended, or `None` while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AgentStatus>,
    /// Its answer text, once it ended.
    #[serde(default)]
    pub text: String,
    /// Tool calls it made.
    #[serde(default)]
    pub tool_calls: u32,
    /// Wall time, ms.
    #[serde(default)]
    pub duration_ms: u64,
    /// What it was doing when it stopped for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Box<WaitingAgent>>,
}

/// A turn waiting for the user: the question and all finished work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Awaiting {
    /// The turn that waits (the one a reply resumes).
    pub turn_id: String,
    /// The turn whose message started the waiting work: itself, or the first of a chain
    /// of resumes (a face that names a conversation's task by its first turn finds it so).
    /// Empty in state saved before it was kept: then `turn_id`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub origin_turn_id: String,
    /// The user's message that started the work.
    pub user_text: String,
    /// What the orchestrator said before it asked the specialists.
    #[serde(default)]
    pub preamble: String,
    /// The Direct Line mode, when the user addressed the specialists directly: the
    /// resumed turn delivers their answers word for word instead of composing (D-21).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<crate::directive::DirectMode>,
    /// The sub-agents asked, in order, finished or waiting.
    pub jobs: Vec<SavedJob>,
    /// A planned turn's progress when it stopped (D-16): the resumed turn goes on from it,
    /// the waiting sub-agents' nodes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Box<crate::plan::PlanCheckpoint>>,
    /// What the user is asked now.
    pub interruption: Interruption,
    /// The turn's budgets spent before it waited (D-15): the resumed turn goes on from
    /// them, so a turn that pauses again and again is still bounded per turn.
    #[serde(default, skip_serializing_if = "TurnSpent::is_none")]
    pub spent: TurnSpent,
    /// The user's locale as the waiting turn had it: a reply that names none (a face's
    /// resume, a "yes") goes on in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// The user's location, kept as the locale is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The W3C `traceparent` of the waiting turn's span, when traces are exported: the
    /// turn that resumes links its trace to it (D-33).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// What a turn has spent of its own limits (D-15) when it stops for the user.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnSpent {
    /// Tool calls taken from the turn's budget.
    #[serde(default)]
    pub tool_calls: u32,
    /// The orchestrator's model calls (a routed turn's; a planned turn keeps its own in
    /// its checkpoint).
    #[serde(default)]
    pub iterations: u32,
}

impl TurnSpent {
    /// Whether nothing was spent (state saved before this was kept reads so).
    pub fn is_none(&self) -> bool {
        *self == TurnSpent::default()
    }
}

/// Why a reply cannot resume the turn, in plain words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// Nothing waits on that turn (never, or no longer).
    #[error("That turn is not waiting for an answer.")]
    NotWaiting,
    /// The reply names another interruption than the one waiting.
    #[error("That is not the question this turn is waiting on; answer the latest one.")]
    WrongInterruption,
    /// The interruption expired.
    #[error("That request has expired, so it counts as declined; ask again to start over.")]
    Expired,
    /// An approval was answered with words, not approve or decline.
    #[error("This needs a yes or a no: approve or decline.")]
    NeedsDecision,
    /// A question was answered with nothing, or with approve.
    #[error("This is a question: answer it in words, or decline to answer.")]
    NeedsAnswer,
    /// An account link was answered without the code its sign-in page showed.
    #[error(
        "Give the code the sign-in page showed once you signed in (6 digits), or say no to skip it."
    )]
    NeedsCode,
}

impl Awaiting {
    /// The reply that `words`, the user's next message, give to what this waits on (see
    /// [`Answer::from_words`]).
    ///
    /// # Errors
    /// The words do not answer it.
    pub fn reply_in_words(&self, words: &str) -> Result<Reply, ReplyError> {
        Ok(Reply {
            interruption_id: self.interruption.id.clone(),
            answer: Answer::from_words(&self.interruption, words)?,
        })
    }

    /// The turn whose message started the waiting work.
    pub fn origin(&self) -> &str {
        if self.origin_turn_id.is_empty() {
            &self.turn_id
        } else {
            &self.origin_turn_id
        }
    }

    /// Whether `reply` to turn `turn_id` may resume this at `now_ms`.
    ///
    /// # Errors
    /// What is wrong with the reply.
    pub fn check(&self, turn_id: &str, reply: &Reply, now_ms: u64) -> Result<(), ReplyError> {
        if self.turn_id != turn_id {
            return Err(ReplyError::NotWaiting);
        }
        if self.interruption.id != reply.interruption_id {
            return Err(ReplyError::WrongInterruption);
        }
        if now_ms >= self.interruption.expires_ms {
            return Err(ReplyError::Expired);
        }
        match (self.interruption.kind, &reply.answer) {
            (InterruptionKind::Approval, Answer::Text(_)) => Err(ReplyError::NeedsDecision),
            // Connected only with the code that the sign-in page showed (D-37).
            (InterruptionKind::AccountLink, Answer::Approve) => Err(ReplyError::NeedsCode),
            (InterruptionKind::AccountLink, Answer::Text(t)) if link_code(t).is_none() => {
                Err(ReplyError::NeedsCode)
            }
            (InterruptionKind::Question, Answer::Approve) => Err(ReplyError::NeedsAnswer),
            (InterruptionKind::Question, Answer::Text(t)) if t.trim().is_empty() => {
                Err(ReplyError::NeedsAnswer)
            }
            _ => Ok(()),
        }
    }
}

/// The id of the turn that resumes `turn_id` with an answer to `interruption_id`: the same
/// answer sent again is the same turn, replayed, never run twice (D-25).
pub fn resume_turn_id(turn_id: &str, interruption_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(turn_id.as_bytes());
    hasher.update([0u8]);
    hasher.update(interruption_id.as_bytes());
    hex_onto(String::from("r_"), &hasher.finalize()[..16])
}

/// SHA-256 of `args` as compact JSON, in hex.
pub fn args_sha256(args: &Value) -> String {
    use sha2::{Digest, Sha256};
    hex_onto(
        String::with_capacity(64),
        &Sha256::digest(args.to_string().as_bytes()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn awaiting(expires_ms: u64) -> Awaiting {
        Awaiting {
            turn_id: "t1".into(),
            origin_turn_id: String::new(),
            user_text: "redeem".into(),
            preamble: String::new(),
            direct: None,
            jobs: Vec::new(),
            plan: None,
            spent: TurnSpent::default(),
            locale: None,
            location: None,
            traceparent: None,
            interruption: Interruption {
                id: "int_1".into(),
                kind: InterruptionKind::Approval,
                agent_id: "rewards".into(),
                label: "Rewards".into(),
                tool: "redeem".into(),
                action: "Redeem 800 points".into(),
                args: json!({ "points": 800 }),
                args_sha256: args_sha256(&json!({ "points": 800 })),
                created_ms: 0,
                expires_ms,
                link: None,
            },
        }
    }

    #[test]
    fn an_account_link_is_answered_with_its_code_or_a_no_never_a_done() {
        let mut waiting = awaiting(1_000);
        waiting.interruption.kind = InterruptionKind::AccountLink;
        let i = &waiting.interruption;
        for said in ["482913", "482 913", "done, the code is 482-913"] {
            assert_eq!(
                Answer::from_words(i, said),
                Ok(Answer::Text("482913".into())),
                "{said}"
            );
        }
        assert_eq!(Answer::from_words(i, "no"), Ok(Answer::Decline));
        for without in [
            "done",
            "Connected!",
            "yes",
            "12345",
            "1234567",
            "my password is hunter2",
        ] {
            assert_eq!(
                Answer::from_words(i, without),
                Err(ReplyError::NeedsCode),
                "{without}"
            );
        }
        let words = Reply {
            interruption_id: "int_1".into(),
            answer: Answer::Text("done".into()),
        };
        assert_eq!(waiting.check("t1", &words, 0), Err(ReplyError::NeedsCode));
        let approve = Reply {
            interruption_id: "int_1".into(),
            answer: Answer::Approve,
        };
        assert_eq!(waiting.check("t1", &approve, 0), Err(ReplyError::NeedsCode));
        let code = Reply {
            interruption_id: "int_1".into(),
            answer: Answer::Text("482 913".into()),
        };
        assert_eq!(waiting.check("t1", &code, 0), Ok(()));
        // "done" says nothing to an approval.
        waiting.interruption.kind = InterruptionKind::Approval;
        assert_eq!(
            Answer::from_words(&waiting.interruption, "done"),
            Err(ReplyError::NeedsDecision)
        );
    }

    #[test]
    fn a_reply_resumes_only_its_turn_and_question_before_expiry() {
        let waiting = awaiting(1_000);
        let reply = Reply {
            interruption_id: "int_1".into(),
            answer: Answer::Approve,
        };
        assert_eq!(waiting.check("t1", &reply, 999), Ok(()));
        let words = Reply {
            answer: Answer::Text("sure thing".into()),
            ..reply.clone()
        };
        assert_eq!(
            waiting.check("t1", &words, 0),
            Err(ReplyError::NeedsDecision)
        );
        assert_eq!(waiting.check("t2", &reply, 0), Err(ReplyError::NotWaiting));
        let other = Reply {
            interruption_id: "int_2".into(),
            ..reply.clone()
        };
        assert_eq!(
            waiting.check("t1", &other, 0),
            Err(ReplyError::WrongInterruption)
        );
        assert_eq!(waiting.check("t1", &reply, 1_000), Err(ReplyError::Expired));
    }

    #[test]
    fn words_answer_an_approval_with_a_yes_or_a_no_and_a_question_with_anything() {
        let mut waiting = awaiting(1_000);
        let approval = &waiting.interruption;
        for yes in ["yes", "Yes!", "  approve ", "go ahead.", "OK"] {
            assert_eq!(
                Answer::from_words(approval, yes),
                Ok(Answer::Approve),
                "{yes}"
            );
        }
        for no in ["no", "No.", "decline", "don't", "Cancel"] {
            assert_eq!(
                Answer::from_words(approval, no),
                Ok(Answer::Decline),
                "{no}"
            );
        }
        for unclear in ["", "maybe", "yes and no", "what does it cost?"] {
            assert_eq!(
                Answer::from_words(approval, unclear),
                Err(ReplyError::NeedsDecision),
                "{unclear}"
            );
        }
        waiting.interruption.kind = InterruptionKind::Question;
        let question = &waiting.interruption;
        assert_eq!(
            Answer::from_words(question, " Berlin "),
            Ok(Answer::Text("Berlin".into()))
        );
        assert_eq!(
            Answer::from_words(question, "  "),
            Err(ReplyError::NeedsAnswer)
        );
        let approve = Reply {
            interruption_id: "int_1".into(),
            answer: Answer::Approve,
        };
        assert_eq!(
            waiting.check("t1", &approve, 0),
            Err(ReplyError::NeedsAnswer)
        );
        let decline = Reply {
            answer: Answer::Decline,
            ..approve
        };
        assert_eq!(waiting.check("t1", &decline, 0), Ok(()));
    }

    #[test]
    fn the_state_reads_back_from_its_json() {
        let waiting = awaiting(5);
        let text = serde_json::to_string(&waiting).unwrap();
        assert_eq!(serde_json::from_str::<Awaiting>(&text).unwrap(), waiting);
        assert_eq!(args_sha256(&json!({ "points": 800 })).len(), 64);
    }

    proptest::proptest! {
        #[test]
        fn any_words_answer_or_are_refused_in_words(words in "\\PC{0,40}") {
            let mut waiting = awaiting(1_000);
            match Answer::from_words(&waiting.interruption, &words) {
                Ok(Answer::Text(_)) => proptest::prop_assert!(false, "an approval took words"),
                Ok(_) => {}
                Err(e) => proptest::prop_assert_eq!(e, ReplyError::NeedsDecision),
            }
            waiting.interruption.kind = InterruptionKind::Question;
            let answered = Answer::from_words(&waiting.interruption, &words);
            if words.trim().is_empty() {
                proptest::prop_assert_eq!(answered, Err(ReplyError::NeedsAnswer));
            } else {
                proptest::prop_assert_eq!(answered, Ok(Answer::Text(words.trim().to_owned())));
            }
        }
    }
}
