//! The long conversation: a fixed cycle of user messages, as one user of the demo app
//! would write them over weeks, that switches among the shipped registry's specialists
//! (shop, support, rewards, strategist): single requests, a few mixed ones, follow-ups that
//! lean on what was said before, and the odd greeting or thanks.

/// An e-mail address one message of the cycle gives (to Support, about signing in): the
/// privacy probe. It must never reach a summary.
pub(crate) const PROBE_EMAIL: &str = "sam.rivera@example.com";

/// The cycle; turn `n` (from 1) sends `MESSAGES[(n - 1) % MESSAGES.len()]`.
pub(crate) const MESSAGES: &[&str] = &[
    "hi! can you find me some coffee deals?",
    "any of those at FreshMart?",
    "what's my points balance right now?",
    "are any of my points about to expire?",
    "my receipt from Valu Depot on Saturday didn't scan",
    "I tried again and it still says it can't read it",
    "I'm planning to buy all my coffee in bulk to save money, good idea?",
    "what would you change about that plan?",
    "thanks, that helps",
    "are there coupons for cat food this week?",
    "how much have I spent on coffee lately?",
    "my receipt didn't scan and find me deals on snacks for a party",
    "how much is 10000 points worth as a gift card?",
    "show me my past redemptions",
    "I scanned my FreshMart receipt last week but never got the points",
    "it's receipt R-20421 if that helps",
    "should I switch to store brands to save?",
    "be honest, is skipping the café every weekday realistic?",
    "where can I get cold brew cheaper?",
    "what did I buy at FreshMart last month?",
    "where do most of my points come from?",
    "I can't sign in on my tablet, my account email is sam.rivera@example.com",
    "ok, what's my balance and are there any deals on pet food?",
    "why was my receipt rejected as a duplicate? I only scanned it once",
    "my plan is to earn 50,000 points by summer by buying more on offer, what am I missing?",
    "any offers on oat milk this week?",
    "what can I get for 25,000 points?",
    "the app says my Copper Kettle Café receipt is pending review, how long does that take?",
    "challenge my budget for next month: $400 on groceries and $60 on coffee",
    "is it worth buying extra stuff to hit the $50 bonus?",
    "show me products from Bean Street Coffee",
    "I'm missing points from my Saturday receipt, and how much are 5,000 points worth?",
    "how do I scan a really long receipt?",
    "thanks! and how many points do I have now?",
    "find me deals on breakfast cereal",
    "poke holes in my plan to cut my grocery budget by $200 a month",
    "can I add e-receipts from my email?",
    "which of my redemptions was the biggest?",
    "any cash back offers at Corner Pharmacy?",
    "great, thank you",
];

/// The message of turn `turn` (from 1), starting the cycle at `offset`.
pub(crate) fn message(turn: usize, offset: usize) -> &'static str {
    MESSAGES[(turn.saturating_sub(1) + offset) % MESSAGES.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cycle_repeats_and_carries_the_probe_once() {
        assert_eq!(message(1, 0), MESSAGES[0]);
        assert_eq!(message(MESSAGES.len() + 1, 0), MESSAGES[0]);
        assert_eq!(message(1, 3), MESSAGES[3]);
        let probes = MESSAGES.iter().filter(|m| m.contains(PROBE_EMAIL)).count();
        assert_eq!(probes, 1);
    }
}
