//! Names as clients see them: an upstream's tools and prompts under its prefix, and which
//! upstream a name the client sends belongs to.

use crate::config::UpstreamConfig;

/// The name clients see for the upstream's `name`.
pub fn exposed(config: &UpstreamConfig, name: &str) -> String {
    format!("{}{name}", config.prefix)
}

/// The upstream (index into `upstreams`) and its own name for the client's `name`, among
/// upstreams whose prefix `name` starts with, longest prefix first; `known(i, rest)` says
/// whether upstream `i` is known to have `rest` (`None`: its names are not known yet). An
/// upstream whose names are not known takes the name only when no other can.
pub fn resolve<'n>(
    upstreams: &[&UpstreamConfig],
    name: &'n str,
    known: impl Fn(usize, &str) -> Option<bool>,
) -> Option<(usize, &'n str)> {
    let mut candidates: Vec<(usize, &str)> = upstreams
        .iter()
        .enumerate()
        .filter_map(|(i, c)| name.strip_prefix(c.prefix.as_str()).map(|rest| (i, rest)))
        .filter(|(_, rest)| !rest.is_empty())
        .collect();
    candidates.sort_by_key(|(i, _)| std::cmp::Reverse(upstreams[*i].prefix.len()));
    if let Some(found) = candidates
        .iter()
        .find(|(i, rest)| known(*i, rest) == Some(true))
    {
        return Some(*found);
    }
    let mut unknown = candidates
        .iter()
        .filter(|(i, rest)| known(*i, rest).is_none());
    match (unknown.next(), unknown.next()) {
        (Some(only), None) => Some(*only),
        _ => None,
    }
}

/// The first name shown twice in `names` (each with its upstream), with both upstreams.
pub fn collision<'a>(
    names: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<(String, &'a str, &'a str)> {
    let mut seen = std::collections::HashMap::new();
    for (name, upstream) in names {
        if let Some(first) = seen.insert(name, upstream)
            && first != upstream
        {
            return Some((name.to_owned(), first, upstream));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::Transport;

    fn upstream(name: &str, prefix: &str) -> UpstreamConfig {
        UpstreamConfig {
            name: name.into(),
            prefix: prefix.into(),
            transport: Transport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec![],
            },
            allow: None,
            deny: vec![],
            per_call_timeout: Duration::from_secs(1),
            max_call: crate::config::MAX_CALL,
            classifier: Default::default(),
            tools: vec![],
            era: Default::default(),
            required: false,
            redaction: Default::default(),
        }
    }

    #[test]
    fn the_longest_prefix_that_knows_the_name_wins() {
        let (a, b) = (upstream("a", "a."), upstream("ab", "a.b."));
        let all = [&a, &b];
        let knows = |i: usize, rest: &str| Some(if i == 0 { rest == "b.x" } else { rest == "x" });
        assert_eq!(resolve(&all, "a.b.x", knows), Some((1, "x")));
        let only_a = |i: usize, rest: &str| Some(i == 0 && rest == "b.x");
        assert_eq!(resolve(&all, "a.b.x", only_a), Some((0, "b.x")));
        assert_eq!(resolve(&all, "c.x", knows), None);
    }

    #[test]
    fn an_empty_prefix_takes_what_it_lists_and_an_unknown_listing_takes_only_what_no_one_else_can()
    {
        let (plain, search) = (upstream("plain", ""), upstream("search", "search."));
        let all = [&plain, &search];
        let known = |i: usize, rest: &str| {
            Some(if i == 0 {
                rest == "echo"
            } else {
                rest == "query"
            })
        };
        assert_eq!(resolve(&all, "echo", known), Some((0, "echo")));
        assert_eq!(resolve(&all, "search.query", known), Some((1, "query")));
        assert_eq!(resolve(&all, "nothing", known), None);
        let plain_unknown =
            |i: usize, rest: &str| if i == 0 { None } else { Some(rest == "query") };
        assert_eq!(resolve(&all, "echo", plain_unknown), Some((0, "echo")));
        let both_unknown = |_: usize, _: &str| None;
        assert_eq!(
            resolve(&all, "search.query", both_unknown),
            None,
            "two could take it"
        );
    }

    #[test]
    fn a_name_is_shown_under_the_prefix() {
        assert_eq!(exposed(&upstream("s", "s."), "y"), "s.y");
        assert_eq!(exposed(&upstream("s", ""), "y"), "y");
    }

    #[test]
    fn a_name_shown_by_two_upstreams_is_a_collision_naming_both() {
        let names = [("echo", "a"), ("other", "a"), ("echo", "b")];
        assert_eq!(collision(names), Some(("echo".to_owned(), "a", "b")));
        assert_eq!(collision([("echo", "a"), ("x", "b")]), None);
    }
}
