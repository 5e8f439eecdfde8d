//! The skills a planner may grant (D-16): each specialist card's tools, named by domain.

use std::sync::Arc;

use crate::tool::Tool;

/// One tool as a planner's sub-agents use it: `<domain>.<tool id>`, where the domain is a
/// specialist card that lists the tool (D-16).
#[derive(Debug, Clone)]
pub struct Skill {
    /// `<domain>.<tool id>`, what `dispatch_agent` grants and `use_skill` names.
    pub name: Arc<str>,
    /// The domain: the id of the card the skill comes from.
    pub domain: Arc<str>,
    /// The tool it runs.
    pub tool: Arc<Tool>,
}

/// The skills of one domain, sorted by name.
#[derive(Debug, Clone)]
pub struct SkillDomain {
    /// The domain (a card id).
    pub id: Arc<str>,
    /// What the domain covers: its card's description.
    pub description: Arc<str>,
    /// Its skills, sorted by name.
    pub skills: Vec<Arc<Skill>>,
}

/// The skills a planner may grant, by domain; domains and skills sorted by name, so every
/// text built from it is byte-stable for the prompt cache.
#[derive(Debug, Clone, Default)]
pub struct SkillCatalog {
    /// The domains, sorted by id.
    pub domains: Vec<SkillDomain>,
}

impl SkillCatalog {
    /// A domain by id.
    pub fn domain(&self, id: &str) -> Option<&SkillDomain> {
        self.domains.iter().find(|d| &*d.id == id)
    }

    /// A skill by name.
    pub fn skill(&self, name: &str) -> Option<&Arc<Skill>> {
        let (domain, _) = name.split_once('.')?;
        self.domain(domain)?
            .skills
            .iter()
            .find(|s| &*s.name == name)
    }

    /// Every skill, in name order.
    pub fn skills(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.domains.iter().flat_map(|d| d.skills.iter())
    }

    /// The domains' ids, comma-separated: what a message naming a wrong one lists.
    pub fn domain_list(&self) -> String {
        self.domains
            .iter()
            .map(|d| &*d.id)
            .collect::<Vec<_>>()
            .join(", ")
    }
}
