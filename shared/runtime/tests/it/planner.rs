//! The planner (D-16): golden transcripts of parallel, serial and diamond plans, a failure
//! in the middle of a chain, the skill grant enforced at run time, refused plan shapes,
//! limits with "continue", and the bad inputs a planning model can send.

use baton_runtime::RuntimeConfig;

use crate::support::*;
use baton_core::ports::store::TurnStore as _;

/// `setup` with the planner (its card ending in `turn_limits`) as the entry.
fn rig_over(setup: TestRegistry, turn_limits: &str, script: &str) -> Rig {
    let setup = setup.with_planner(turn_limits);
    make_rig_with(
        &setup,
        script,
        RuntimeConfig {
            orchestrator: Some("planner".into()),
            ..RuntimeConfig::default()
        },
    )
}

fn rig(turn_limits: &str, script: &str) -> Rig {
    rig_over(TestRegistry::default(), turn_limits, script)
}

/// A node that calls one skill, then answers.
fn node(id: &str, skill: &str, args: &str, answer: &str) -> String {
    format!(
        r#"
  {id}:
    - when: {{ after_tool_results: false }}
      delay_ms: 100
      tool_calls: [{{ name: use_skill, args: {{ skill: {skill}, arguments: {args} }} }}]
    - when: {{ after_tool_results: true }}
      delay_ms: 100
      text: ["{answer}"]
"#
    )
}

/// The planner: looks up a domain, dispatches `step`, then answers.
fn planner(step: &str) -> String {
    format!(
        r#"
agents:
  planner:
    - when: {{ purpose: route, after_tool_results: false }}
      delay_ms: 20
      text: ["Let me plan that."]
      tool_calls: [{{ name: get_skill, args: {{ domain: rewards }} }}]
    - when: {{ purpose: route, after_tool_results: true }}
      delay_ms: 20
      tool_calls:
{step}
    - when: {{ purpose: compose }}
      delay_ms: 20
      text: ["Here is ", "the whole picture."]
"#
    )
}

fn dispatch(id: &str, skills: &str, deps: &str) -> String {
    format!(
        "        - {{ name: dispatch_agent, args: {{ agent_id: {id}, mission: \"do the {id} part\", skills: [{skills}], depends_on: [{deps}] }} }}\n"
    )
}

/// A step of dispatches: `(agent_id, skills, depends_on)` each.
fn steps(dispatches: &[(&str, &str, &str)]) -> String {
    dispatches
        .iter()
        .map(|(id, skills, deps)| dispatch(id, skills, deps))
        .collect()
}

/// What `agent` was asked, in order.
fn requests_of(rig: &Rig, agent: &str) -> Vec<baton_core::ports::model::ModelRequest> {
    rig.model
        .requests()
        .into_iter()
        .filter(|r| &*r.agent_id == agent)
        .collect()
}

fn planner_agent_requests(rig: &Rig, agent: &str) -> usize {
    requests_of(rig, agent).len()
}

const POINTS: &str = "rewards.points_balance";
const OFFERS: &str = "shop.search_offers";
const RECEIPT: &str = "support.lookup_receipt";

fn nodes(ids: &[&str]) -> String {
    ids.iter()
        .map(|id| match *id {
            "balance" => node(id, POINTS, "{}", "You have 1200 points."),
            "offers" => node(
                id,
                OFFERS,
                "{ query: coffee }",
                "Roast coffee earns 500 points.",
            ),
            "receipt" => node(
                id,
                RECEIPT,
                "{ query: receipt }",
                "Receipt R-1 was rejected.",
            ),
            other => node(other, POINTS, "{}", "Counted again."),
        })
        .collect()
}

async fn golden(script: String, text: &str) -> String {
    let rig = rig("", &script);
    let (episode, events) = run(&rig, request(text, None, "t1")).await;
    transcript(&rig, &episode, &events).await
}

#[tokio::test(start_paused = true)]
async fn parallel_plan() {
    let step = steps(&[("balance", POINTS, ""), ("offers", OFFERS, "")]);
    let script = format!("{}{}", planner(&step), nodes(&["balance", "offers"]));
    insta::assert_snapshot!(
        golden(script, "how many points do I have, and any coffee deals?").await
    );
}

#[tokio::test(start_paused = true)]
async fn serial_chain() {
    let step = steps(&[
        ("receipt", RECEIPT, ""),
        ("balance", POINTS, "receipt"),
        ("offers", OFFERS, "balance"),
    ]);
    let script = format!(
        "{}{}",
        planner(&step),
        nodes(&["receipt", "balance", "offers"])
    );
    insta::assert_snapshot!(golden(script, "check my receipt, then my points, then deals").await);
}

#[tokio::test(start_paused = true)]
async fn diamond() {
    let step = steps(&[
        ("total", POINTS, "balance, offers"),
        ("receipt", RECEIPT, ""),
        ("balance", POINTS, "receipt"),
        ("offers", OFFERS, "receipt"),
    ]);
    let script = format!(
        "{}{}",
        planner(&step),
        nodes(&["receipt", "balance", "offers", "total"])
    );
    insta::assert_snapshot!(golden(script, "receipt, then points and deals, then a total").await);
}

#[tokio::test(start_paused = true)]
async fn a_node_sees_its_mission_skills_and_inputs_and_nothing_of_the_conversation() {
    let step = format!(
        "{}{}",
        dispatch("balance", POINTS, ""),
        dispatch("total", &format!("{POINTS}, {OFFERS}"), "balance")
    );
    let script = format!("{}{}", planner(&step), nodes(&["balance", "total"]));
    let rig = rig("", &script);
    let (episode, _) = run(&rig, request("first turn about points", None, "t0")).await;
    run(
        &rig,
        request("and now the total please", Some(&episode), "t1"),
    )
    .await;
    let total: Vec<_> = requests_of(&rig, "total");
    let first = total.last().unwrap();
    assert_eq!(first.messages.len(), 3, "mission, its call, its result");
    assert_eq!(first.messages[0].text(), "do the total part");
    let system: String = first.system.iter().map(|b| &*b.text).collect();
    assert!(
        system.contains("Do your mission with your skills"),
        "{system}"
    );
    assert!(
        system.contains(
            "<result agent=\"balance\" status=\"completed\">\nYou have 1200 points.\n</result>"
        ),
        "{system}"
    );
    assert!(!system.contains("first turn about points"), "{system}");
    let tools: Vec<&str> = first.tools.iter().map(|t| &*t.name).collect();
    assert_eq!(tools, ["use_skill"]);
    assert_eq!(
        first.tools[0].input_schema["properties"]["skill"]["enum"],
        serde_json::json!([POINTS, OFFERS])
    );
}

#[tokio::test(start_paused = true)]
async fn a_failure_in_the_middle_of_a_chain_skips_its_dependents() {
    let step = steps(&[
        ("receipt", RECEIPT, ""),
        ("balance", POINTS, "receipt"),
        ("offers", OFFERS, "balance"),
    ]);
    let broken = r#"
  balance:
    - error: invalid
"#;
    let script = format!(
        "{}{}{broken}",
        planner(&step),
        nodes(&["receipt", "offers"])
    );
    insta::assert_snapshot!(golden(script, "receipt, then points, then deals").await);
}

#[tokio::test(start_paused = true)]
async fn a_skill_outside_the_grant_is_refused_at_run_time() {
    let step = dispatch("balance", POINTS, "");
    let sneaky = r#"
  balance:
    - when: { after_tool_results: false }
      tool_calls: [{ name: use_skill, args: { skill: support.lookup_receipt, arguments: { query: x } } }]
    - when: { after_tool_results: true }
      text: ["I could not look that up."]
"#;
    let script = format!("{}{sneaky}", planner(&step));
    let rig = rig("", &script);
    let (episode, events) = run(&rig, request("points please", None, "t1")).await;
    assert!(
        !events.iter().any(|e| e.event.name() == "tool_call_start"),
        "no tool ran"
    );
    let record = rig
        .store
        .turns(&alice(), &episode, 1)
        .await
        .unwrap()
        .remove(0);
    let guard = record
        .routing
        .guards
        .iter()
        .find(|g| g.guard.as_str() == "skill_not_granted")
        .expect("the refusal is traced");
    assert!(guard.detail.contains("support.lookup_receipt"), "{guard:?}");
    let balance = requests_of(&rig, "balance").pop().unwrap();
    let refusal = serde_json::to_string(&balance.messages.last().unwrap().content).unwrap();
    assert!(
        refusal.contains("is not available to this agent"),
        "{refusal}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_step_runs_nothing_and_the_planner_can_correct_it() {
    let script = format!(
        r#"
agents:
  planner:
    - when: {{ purpose: route, after_tool_results: false }}
      once: true
      tool_calls:
        - {{ name: dispatch_agent, args: {{ agent_id: a, mission: "one", skills: [{POINTS}], depends_on: [b] }} }}
        - {{ name: dispatch_agent, args: {{ agent_id: b, mission: "two", skills: [{POINTS}], depends_on: [a] }} }}
        - {{ name: dispatch_agent, args: {{ agent_id: c, mission: "three", skills: [weather.now], depends_on: [ghost] }} }}
        - {{ name: get_agent_results, args: {{ agent_ids: [zz] }} }}
        - {{ name: teleport, args: {{}} }}
    - when: {{ purpose: route, after_tool_results: true }}
      tool_calls:
{}
    - when: {{ purpose: compose }}
      text: ["Fixed and done."]
{}"#,
        dispatch("balance", POINTS, ""),
        nodes(&["balance"])
    );
    let rig = rig("", &script);
    let (episode, events) = run(&rig, request("my points, in a tangle", None, "t1")).await;
    insta::assert_snapshot!(transcript(&rig, &episode, &events).await);
    let second = requests_of(&rig, "planner").into_iter().nth(1).unwrap();
    let seen = serde_json::to_string(&second.messages.last().unwrap().content).unwrap();
    for expected in [
        "Nothing in this step ran",
        "the dependencies form a cycle (a → b → a)",
        "there is no skill \\\"weather.now\\\"",
        "No sub-agent called zz was dispatched in this turn. Dispatched: none yet.",
        "There is no tool teleport",
    ] {
        assert!(seen.contains(expected), "{expected} not in {seen}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_limit_answers_with_what_was_done_and_continue_runs_the_rest_once() {
    let step = steps(&[
        ("balance", POINTS, ""),
        ("offers", OFFERS, ""),
        ("receipt", RECEIPT, "balance"),
    ]);
    let script = format!(
        "{}{}",
        planner(&step),
        nodes(&["balance", "offers", "receipt"])
    );
    let rig = rig("turn_limits: { max_subagents: 2 }\n", &script);
    let (episode, events) = run(&rig, request("points, deals, then my receipt", None, "t1")).await;
    let said = answer(&events);
    assert!(said.contains("You have 1200 points."), "{said}");
    assert!(
        said.contains("Not started yet: receipt. Would you like me to continue?"),
        "{said}"
    );
    assert!(matches!(
        events.last().unwrap().event,
        baton_core::events::Event::Completed {
            outcome: baton_core::turn::TurnOutcome::Limited,
            ..
        }
    ));
    let meta = rig.store.episode(&alice(), &episode).await.unwrap();
    let pending = meta.state.pending_plan.expect("the rest waits");
    assert_eq!(pending.nodes[0].id, "receipt");
    assert_eq!(pending.inputs[0].id, "balance");

    let (_, events) = run(&rig, request("yes", Some(&episode), "t2")).await;
    let said = answer(&events);
    assert!(said.contains("the whole picture."), "{said}");
    assert_eq!(
        planner_agent_requests(&rig, "balance"),
        2,
        "balance ran once (a call, then its answer), never again"
    );
    assert_eq!(planner_agent_requests(&rig, "receipt"), 2);
    let receipt = requests_of(&rig, "receipt").into_iter().next().unwrap();
    let system: String = receipt.system.iter().map(|b| &*b.text).collect();
    assert!(
        system.contains("You have 1200 points."),
        "its input came from the last turn: {system}"
    );
    let meta = rig.store.episode(&alice(), &episode).await.unwrap();
    assert_eq!(meta.state.pending_plan, None);
    let record = rig
        .store
        .turns(&alice(), &episode, 1)
        .await
        .unwrap()
        .remove(0);
    let plan = record.routing.plan.unwrap();
    assert_eq!(plan.continued, ["receipt"]);
    assert_eq!(record.consulted.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn fifty_dispatches_run_within_the_turns_budget_and_the_rest_waits() {
    let step: String = (0..50)
        .map(|i| dispatch(&format!("n{i}"), POINTS, ""))
        .collect();
    let workers: String = (0..50)
        .map(|i| node(&format!("n{i}"), POINTS, "{}", "Counted."))
        .collect();
    let script = format!("{}{workers}", planner(&step));
    let rig = rig("", &script);
    let (episode, events) = run(&rig, request("count my points fifty times", None, "t1")).await;
    let ran = events
        .iter()
        .filter(|e| e.event.name() == "node_start")
        .count();
    assert_eq!(ran, 8, "the default limit of sub-agents per turn");
    let waiting = events
        .iter()
        .filter(|e| {
            matches!(&e.event, baton_core::events::Event::NodeEnd { status, .. }
                if *status == baton_core::plan::NodeStatus::NotRun)
        })
        .count();
    assert_eq!(waiting, 42);
    assert!(answer(&events).ends_with("Would you like me to continue?"));
    let meta = rig.store.episode(&alice(), &episode).await.unwrap();
    assert_eq!(meta.state.pending_plan.unwrap().nodes.len(), 42);
}

#[tokio::test(start_paused = true)]
async fn a_looping_a_slow_and_a_garbled_sub_agent_are_each_bounded() {
    let step = steps(&[
        ("looper", POINTS, ""),
        ("sleeper", POINTS, ""),
        ("garbler", POINTS, ""),
        ("after", POINTS, "sleeper"),
    ]);
    let faulty = r#"
  looper:
    - tool_calls: [{ name: use_skill, args: { skill: rewards.points_balance, arguments: {} } }]
  sleeper:
    - delay_ms: 600000
      text: ["too late"]
  garbler:
    - error: malformed
"#;
    let script = format!("{}{faulty}{}", planner(&step), nodes(&["after"]));
    let rig = rig("", &script);
    let (episode, events) = run(&rig, request("points, carefully", None, "t1")).await;
    let record = rig
        .store
        .turns(&alice(), &episode, 1)
        .await
        .unwrap()
        .remove(0);
    let plan = record.routing.plan.unwrap();
    let status = |id: &str| {
        plan.outcomes
            .iter()
            .find(|o| o.id == id)
            .map(|o| (o.status.as_str(), o.tool_calls))
            .unwrap()
    };
    assert_eq!(
        status("looper"),
        ("failed", 5),
        "stopped at its tool-call limit"
    );
    assert_eq!(status("sleeper"), ("timeout", 0));
    assert_eq!(status("garbler"), ("failed", 0));
    assert_eq!(status("after"), ("skipped", 0));
    assert!(
        record
            .routing
            .guards
            .iter()
            .any(|g| g.guard.as_str() == "subagent_tool_limit"),
        "{:?}",
        record.routing.guards
    );
    let said = answer(&events);
    assert!(said.contains("the whole picture."), "{said}");
}

#[tokio::test(start_paused = true)]
async fn an_answer_from_memory_is_sent_back_once_with_a_forced_tool() {
    let script = format!(
        r#"
agents:
  planner:
    - when: {{ purpose: route, after_tool_results: false }}
      once: true
      text: ["You have about a million points."]
    - when: {{ purpose: route }}
      tool_calls:
{}
    - when: {{ purpose: compose }}
      text: ["You have 1200 points."]
{}"#,
        dispatch("balance", POINTS, ""),
        nodes(&["balance"])
    );
    let rig = rig("", &script);
    let (_, events) = run(&rig, request("what is my points balance", None, "t1")).await;
    let said = answer(&events);
    assert_eq!(said, "You have 1200 points.", "the guess is never shown");
    let second = requests_of(&rig, "planner").into_iter().nth(1).unwrap();
    assert_eq!(
        second.tool_choice,
        baton_core::ports::model::ToolChoice::Any
    );
}

#[path = "../shared/planner_resume.rs"]
mod planner_resume;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_after_each_wave_resumes_without_running_a_node_twice() {
    for cut in [1, 2, 3] {
        let store = std::sync::Arc::new(baton_inproc::HeapStore::new());
        planner_resume::cut_after_wave_and_resume(store, cut).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_skill_whose_tool_keeps_failing_has_its_circuit_opened_for_every_sub_agent() {
    let step = steps(&[
        ("first", "rewards.down_points", ""),
        ("second", "rewards.down_points", ""),
    ]);
    let caller = |id: &str| {
        format!(
            r#"
  {id}:
    - when: {{ after_tool_results: false }}
      tool_calls: [{{ name: use_skill, args: {{ skill: rewards.down_points, arguments: {{}} }} }}]
    - when: {{ after_tool_results: true }}
      text: ["The balance service is down."]
"#
        )
    };
    let script = format!("{}{}{}", planner(&step), caller("first"), caller("second"));
    let setup = TestRegistry {
        rewards_tool: "down_points",
        ..TestRegistry::default()
    };
    let rig = rig_over(setup, "turn_limits: { breaker_failures: 1 }\n", &script);
    let (episode, _) = run(&rig, request("my balance twice", None, "t1")).await;
    let record = rig
        .store
        .turns(&alice(), &episode, 1)
        .await
        .unwrap()
        .remove(0);
    let breakers: Vec<_> = record
        .routing
        .guards
        .iter()
        .filter(|g| g.guard.as_str() == "breaker")
        .collect();
    assert_eq!(
        breakers.len(),
        1,
        "the second call found the circuit open: {:?}",
        record.routing.guards
    );
    let plan = record.routing.plan.unwrap();
    assert!(
        plan.outcomes.iter().all(|o| o.status.as_str() == "failed"),
        "{plan:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_mission_shown_in_the_plan_passes_the_privacy_guard() {
    let step = "        - { name: dispatch_agent, args: { agent_id: mail, mission: \"write to jane.doe@example.com about points\", skills: [rewards.points_balance] } }\n";
    let script = format!("{}{}", planner(step), node("mail", POINTS, "{}", "Sent."));
    let rig = rig("", &script);
    let (episode, events) = run(&rig, request("tell jane about my points", None, "t1")).await;
    let plan = events
        .iter()
        .find_map(|e| match &e.event {
            baton_core::events::Event::Plan { nodes } => Some(nodes[0].mission.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(plan, "write to [email] about points");
    let record = rig
        .store
        .turns(&alice(), &episode, 1)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        record.routing.plan.unwrap().nodes[0].mission,
        "write to [email] about points",
        "the journal keeps what was shown"
    );
    // The sub-agent itself gets its mission as the planner wrote it.
    let mail = requests_of(&rig, "mail").into_iter().next().unwrap();
    assert_eq!(
        mail.messages[0].text(),
        "write to jane.doe@example.com about points"
    );
}

#[tokio::test(start_paused = true)]
async fn a_planner_takes_a_hash_as_text_and_refuses_must_consult_plainly() {
    let step = dispatch("balance", POINTS, "");
    let script = format!("{}{}", planner(&step), nodes(&["balance"]));
    let rig = rig("", &script);
    let (_, events) = run(&rig, request("#rewards what's my balance", None, "t1")).await;
    assert!(
        events.iter().any(|e| e.event.name() == "plan"),
        "planned, not a Direct Line"
    );
    let refused = rig
        .runtime
        .run_turn(baton_runtime::TurnRequest {
            must_consult: vec!["rewards".into()],
            ..request("what's my balance", None, "t2")
        })
        .await
        .err()
        .unwrap();
    assert!(
        refused.message.contains("no fixed specialists"),
        "{}",
        refused.message
    );
}

#[tokio::test(start_paused = true)]
async fn a_spent_tool_budget_holds_the_next_wave_and_continue_runs_it() {
    let step = steps(&[
        ("receipt", RECEIPT, ""),
        ("balance", POINTS, "receipt"),
        ("offers", OFFERS, "balance"),
    ]);
    let script = format!(
        "{}{}",
        planner(&step),
        nodes(&["receipt", "balance", "offers"])
    );
    let rig = rig("turn_limits: { max_tool_calls: 2 }\n", &script);
    let (episode, events) = run(&rig, request("receipt, points, then deals", None, "t1")).await;
    let said = answer(&events);
    assert!(
        said.contains("this turn reached its limit of tool calls. Done: receipt, balance. Not started yet: offers."),
        "{said}"
    );
    assert_eq!(planner_agent_requests(&rig, "offers"), 0, "never started");
    let (_, events) = run(&rig, request("go on", Some(&episode), "t2")).await;
    assert!(answer(&events).contains("the whole picture."));
    assert_eq!(planner_agent_requests(&rig, "offers"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_planner_that_never_answers_is_stopped_at_its_step_limit() {
    let script = r#"
agents:
  planner:
    - tool_calls: [{ name: get_skill, args: { domain: rewards } }]
"#;
    let rig = rig("turn_limits: { max_iterations: 3 }\n", script);
    let (episode, events) = run(&rig, request("what is my balance", None, "t1")).await;
    assert_eq!(planner_agent_requests(&rig, "planner"), 3);
    let said = answer(&events);
    assert!(
        said.contains("this turn reached its limit of steps"),
        "{said}"
    );
    let record = rig
        .store
        .turns(&alice(), &episode, 1)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        record.routing.limit,
        Some(baton_core::trace::LimitHit::OrchestratorIterations)
    );
}

#[tokio::test(start_paused = true)]
async fn planned_sub_agents_are_counted_under_their_template_not_their_chosen_ids() {
    let step = steps(&[("balance", POINTS, ""), ("offers", OFFERS, "")]);
    let script = format!("{}{}", planner(&step), nodes(&["balance", "offers"]));
    let rig = rig("", &script);
    run(&rig, request("points and deals", None, "t1")).await;
    let counters = rig.metrics.snapshot();
    let agents: Vec<&String> = counters
        .keys()
        .filter(|k| {
            k.starts_with("subagent_invocations_total,") || k.starts_with("model_calls_total,")
        })
        .collect();
    assert!(!agents.is_empty());
    for key in &agents {
        assert!(
            key.contains("agent=planner-worker") || key.contains("agent=planner"),
            "a dimension per chosen id: {key}"
        );
        assert!(
            !key.contains("agent=balance") && !key.contains("agent=offers"),
            "{key}"
        );
    }
    assert_eq!(
        counters.get("subagent_invocations_total,agent=planner-worker,outcome=ok"),
        Some(&2)
    );
}

#[tokio::test(start_paused = true)]
async fn continue_skips_a_held_node_whose_dependency_had_failed() {
    let step = steps(&[
        ("receipt", RECEIPT, ""),
        ("offers", OFFERS, ""),
        ("balance", POINTS, "receipt"),
    ]);
    let broken = r#"
  receipt:
    - error: invalid
"#;
    let script = format!(
        "{}{broken}{}",
        planner(&step),
        nodes(&["offers", "balance"])
    );
    let rig = rig("turn_limits: { max_subagents: 2 }\n", &script);
    let (episode, events) = run(&rig, request("receipt, deals, then points", None, "t1")).await;
    assert!(answer(&events).contains("Not started yet: balance."));
    let (_, events) = run(&rig, request("yes", Some(&episode), "t2")).await;
    let skipped = events.iter().find_map(|e| match &e.event {
        baton_core::events::Event::NodeEnd {
            node,
            status,
            reason,
            ..
        } if node == "balance" => Some((status.as_str(), reason.clone())),
        _ => None,
    });
    assert_eq!(
        skipped,
        Some((
            "skipped",
            Some("Skipped because receipt never finished.".to_owned())
        ))
    );
    assert_eq!(planner_agent_requests(&rig, "balance"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_planner_model_that_hangs_ends_the_turn_at_its_deadline_in_plain_words() {
    let script = r#"
agents:
  planner:
    - delay_ms: 3600000
      text: ["never"]
"#;
    let rig = rig("", script);
    let (episode, events) = run(&rig, request("what is my balance", None, "t1")).await;
    let said: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            baton_core::events::Event::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        ["This is taking too long, so I stopped. Please try again in a moment."]
    );
    let record = rig
        .store
        .turns(&alice(), &episode, 1)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(record.outcome, baton_core::turn::TurnOutcome::Failed);
}
