//! When a tool call needs the user's approval before it runs, and how the action is put in
//! plain words for them (a tool's `approval:` in `tools.yaml`).
//!
//! A rule is `always`, or one comparison of an argument with a literal:
//! `points > 500`, `amount >= 100.5`, `reward == "bike"`, `mode != "dry_run"`. The
//! argument is named by its path (`order.total`). A call whose argument is missing, or of
//! another type than the literal, needs approval: when the rule cannot tell, the user
//! decides. Parsing is total: any text gives a rule or a plain message.

use std::fmt;

use serde_json::Value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }
}

/// When a call needs approval.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Every call.
    Always,
    /// Calls whose argument at `path` compares with `value` by `op`.
    Compare {
        /// The argument's path, one key a step.
        path: Vec<String>,
        /// The comparison.
        op: Op,
        /// The literal: a number, a string, a boolean or null.
        value: Value,
    },
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Always => f.write_str("always"),
            Condition::Compare { path, op, value } => {
                write!(f, "{} {} {value}", path.join("."), op.symbol())
            }
        }
    }
}

impl Condition {
    /// Reads a rule: `always`, or `<path> <op> <literal>`.
    ///
    /// # Errors
    /// A plain message saying what is wrong with the rule.
    pub fn parse(rule: &str) -> Result<Self, String> {
        let rule = rule.trim();
        if rule == "always" {
            return Ok(Condition::Always);
        }
        // Two-character operators first, so that `>=` is not read as `>`.
        let ops = [
            (">=", Op::Ge),
            ("<=", Op::Le),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            (">", Op::Gt),
            ("<", Op::Lt),
        ];
        let Some((at, symbol, op)) = ops
            .iter()
            .filter_map(|(s, op)| rule.find(s).map(|at| (at, *s, *op)))
            .min_by_key(|(at, s, _)| (*at, std::cmp::Reverse(s.len())))
        else {
            return Err(format!(
                "`{rule}` is not a rule: write `always`, or an argument, an operator (> >= < <= == !=) and a value, e.g. `points > 500`"
            ));
        };
        let name = rule[..at].trim();
        let literal = rule[at + symbol.len()..].trim();
        let path: Vec<String> = name.split('.').map(str::to_owned).collect();
        if path.iter().any(|p| {
            p.is_empty()
                || !p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }) {
            return Err(format!(
                "`{name}` is not an argument name (letters, digits, `_`, `-`, with `.` between levels)"
            ));
        }
        let value: Value = serde_json::from_str(literal).map_err(|_| {
            format!(
                "`{literal}` is not a value: use a number, a \"quoted string\", true, false or null"
            )
        })?;
        if value.is_array() || value.is_object() {
            return Err(format!(
                "`{literal}` is not a value to compare with: use a number, a string, true, false or null"
            ));
        }
        if matches!(op, Op::Gt | Op::Ge | Op::Lt | Op::Le) && !value.is_number() {
            return Err(format!(
                "`{}` compares with a number only; use == or != for `{literal}`",
                op.symbol()
            ));
        }
        Ok(Condition::Compare { path, op, value })
    }

    /// Whether a call with `args` needs approval.
    pub fn holds(&self, args: &Value) -> bool {
        let Condition::Compare { path, op, value } = self else {
            return true;
        };
        let Some(found) = path.iter().try_fold(args, |v, key| v.get(key)) else {
            return true;
        };
        match (found, value) {
            (Value::Number(a), Value::Number(b)) => {
                let (Some(a), Some(b)) = (a.as_f64(), b.as_f64()) else {
                    return true;
                };
                match op {
                    Op::Gt => a > b,
                    Op::Ge => a >= b,
                    Op::Lt => a < b,
                    Op::Le => a <= b,
                    Op::Eq => a == b,
                    Op::Ne => a != b,
                }
            }
            (a, b) if std::mem::discriminant(a) == std::mem::discriminant(b) => match op {
                Op::Eq => a == b,
                Op::Ne => a != b,
                // Ordering operators take numbers only (checked when parsed).
                _ => true,
            },
            _ => true,
        }
    }
}

/// A tool's approval settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPolicy {
    /// When a call needs approval.
    pub when: Condition,
    /// The action in plain words, with `{argument}` placeholders.
    pub action: String,
}

impl ApprovalPolicy {
    /// The action of a call with `args`, in plain words: each `{path}` is replaced by that
    /// argument (a string as it is, anything else as JSON); an unknown one stays as it is.
    pub fn describe(&self, args: &Value) -> String {
        let mut out = String::with_capacity(self.action.len());
        let mut rest = self.action.as_str();
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                out.push_str(&rest[open..]);
                return out;
            };
            let name = &after[..close];
            let found = name.split('.').try_fold(args, |v, key| v.get(key));
            match found {
                Some(Value::String(s)) => out.push_str(s),
                Some(v) if !name.is_empty() => out.push_str(&v.to_string()),
                _ => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
            }
            rest = &after[close + 1..];
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn rules_read_and_decide() {
        let over = Condition::parse("points > 500").unwrap();
        assert!(over.holds(&json!({ "points": 501 })));
        assert!(!over.holds(&json!({ "points": 500 })));
        assert!(
            Condition::parse("points >= 500")
                .unwrap()
                .holds(&json!({ "points": 500 }))
        );
        let bike = Condition::parse(r#"reward == "bike""#).unwrap();
        assert!(bike.holds(&json!({ "reward": "bike" })));
        assert!(!bike.holds(&json!({ "reward": "mug" })));
        let nested = Condition::parse("order.total < 10").unwrap();
        assert!(nested.holds(&json!({ "order": { "total": 9.5 } })));
        assert_eq!(Condition::parse(" always ").unwrap(), Condition::Always);
        assert_eq!(nested.to_string(), "order.total < 10");
    }

    #[test]
    fn a_call_the_rule_cannot_judge_needs_approval() {
        let over = Condition::parse("points > 500").unwrap();
        assert!(over.holds(&json!({})));
        assert!(over.holds(&json!({ "points": "a lot" })));
        assert!(over.holds(&json!("not an object")));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (rule, words) in [
            ("points", "is not a rule"),
            ("> 5", "is not an argument name"),
            ("points > many", "is not a value"),
            (r#"reward > "bike""#, "compares with a number only"),
            ("points == [1]", "not a value to compare"),
            ("a..b == 1", "is not an argument name"),
        ] {
            let e = Condition::parse(rule).unwrap_err();
            assert!(e.contains(words), "{rule}: {e}");
        }
    }

    #[test]
    fn the_action_names_the_arguments() {
        let policy = ApprovalPolicy {
            when: Condition::Always,
            action: "Redeem {points} points for {reward} ({missing}) {".into(),
        };
        assert_eq!(
            policy.describe(&json!({ "points": 800, "reward": "a bike" })),
            "Redeem 800 points for a bike ({missing}) {"
        );
    }

    proptest! {
        /// Any text is a rule or a message, and a rule judges any arguments.
        #[test]
        fn any_rule_text_is_read_or_refused(rule in "\\PC{0,40}", n in any::<i64>(), s in "\\PC{0,8}") {
            match Condition::parse(&rule) {
                Ok(c) => {
                    let _ = c.holds(&json!({ "points": n, "reward": s }));
                    // A rule written back reads as itself.
                    prop_assert_eq!(Condition::parse(&c.to_string()).unwrap(), c);
                }
                Err(e) => prop_assert!(!e.is_empty()),
            }
        }

        #[test]
        fn any_template_is_filled_without_panicking(action in "\\PC{0,40}", s in "\\PC{0,8}") {
            let policy = ApprovalPolicy { when: Condition::Always, action };
            let _ = policy.describe(&json!({ "reward": s }));
        }
    }
}
