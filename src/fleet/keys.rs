//! The names of a fleet's keys and channel, and why no two fleets' names can meet.
//!
//! Every name is `E:` followed by a role, where `E` is the prefix with `%` written `%25` and `:`
//! written `%3A` (percent-encoding of those two bytes; every other character is kept). So `E`
//! holds no `:`, the first `:` of a name ends it, and the prefix is read back from it: the
//! encoding is injective. After it come the roles `breaker:D`, `votes:D`, `probe:D` (the
//! dependency `D` is the rest of the name, whatever it holds), `epoch` and `incarnation` (no `:`,
//! so never a dependency's key), and the channel `transitions`. Two different (prefix, role,
//! dependency) triples never give one name. A prefix without `:` or `%` is its own encoding, so
//! its keys are the ones earlier builds wrote.

/// The keys and channel of one dependency.
#[derive(Clone, Debug)]
pub(crate) struct Keys {
    pub(crate) record: String,
    pub(crate) votes: String,
    pub(crate) lease: String,
    pub(crate) epoch: String,
    pub(crate) incarnation: String,
    pub(crate) channel: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str, dependency: &str) -> Keys {
        let encoded = encode(prefix);
        Keys {
            record: format!("{encoded}:breaker:{dependency}"),
            votes: format!("{encoded}:votes:{dependency}"),
            lease: format!("{encoded}:probe:{dependency}"),
            epoch: format!("{encoded}:epoch"),
            incarnation: format!("{encoded}:incarnation"),
            channel: format!("{encoded}:transitions"),
        }
    }
}

/// The prefix as it stands in a name: `%` and `:` percent-encoded.
pub(crate) fn encode(prefix: &str) -> String {
    let mut encoded = String::with_capacity(prefix.len());
    for c in prefix.chars() {
        match c {
            '%' => encoded.push_str("%25"),
            ':' => encoded.push_str("%3A"),
            c => encoded.push(c),
        }
    }
    encoded
}

/// The fleet's epoch counter (see `docs::fleet`).
pub(crate) fn epoch_key(prefix: &str) -> String {
    format!("{}:epoch", encode(prefix))
}

/// Set, with the server's time to the µs, when the first record is written after the keys were
/// wiped: a changed value tells an instance that every record was lost, even if another instance
/// has written the epoch again since.
pub(crate) fn incarnation_key(prefix: &str) -> String {
    format!("{}:incarnation", encode(prefix))
}

/// The fleet's pub/sub channel.
pub(crate) fn channel(prefix: &str) -> String {
    format!("{}:transitions", encode(prefix))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Every name a fleet of `prefix` uses for `dependencies`, with what it names.
    fn names(prefix: &str, dependencies: &[&str]) -> Vec<(String, String)> {
        let mut names = Vec::new();
        for dependency in dependencies {
            let keys = Keys::new(prefix, dependency);
            for (role, key) in [
                ("record", keys.record),
                ("votes", keys.votes),
                ("lease", keys.lease),
            ] {
                names.push((key, format!("{prefix:?} {role} of {dependency:?}")));
            }
            assert_eq!(keys.epoch, epoch_key(prefix));
            assert_eq!(keys.incarnation, incarnation_key(prefix));
            assert_eq!(keys.channel, channel(prefix));
        }
        names.push((epoch_key(prefix), format!("{prefix:?} epoch")));
        names.push((incarnation_key(prefix), format!("{prefix:?} incarnation")));
        // Channels are another namespace than keys in Redis; kept apart here all the same.
        names.push((channel(prefix), format!("{prefix:?} channel")));
        names
    }

    /// Prefixes and names built from the pieces that can make two names meet: the separator,
    /// the escape, the role words, and their encodings written out by hand.
    fn pieces() -> Vec<String> {
        let atoms = [
            "",
            ":",
            "%",
            "%3A",
            "%25",
            "gw",
            "breaker",
            "votes",
            "probe",
            "epoch",
            "incarnation",
            "transitions",
            "a:b",
            "%3a",
        ];
        let mut pieces: Vec<String> = atoms.iter().map(|s| (*s).to_owned()).collect();
        for a in atoms {
            for b in atoms {
                pieces.push(format!("{a}{b}"));
                pieces.push(format!("{a}:{b}"));
            }
        }
        pieces.sort();
        pieces.dedup();
        pieces
    }

    #[test]
    fn no_two_fleets_names_meet_whatever_their_prefixes_and_dependencies() {
        let pieces = pieces();
        let prefixes: Vec<&str> = pieces
            .iter()
            .map(String::as_str)
            .filter(|p| !p.is_empty())
            .collect();
        let dependencies: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let mut seen: HashMap<String, String> = HashMap::new();
        for prefix in &prefixes {
            for (name, what) in names(prefix, &dependencies) {
                if let Some(before) = seen.insert(name.clone(), what.clone()) {
                    panic!("{name:?} names both {before} and {what}");
                }
            }
        }
        assert!(seen.len() > 100_000, "{} names checked", seen.len());
    }

    #[test]
    fn the_issue_s_fleets_keep_apart() {
        // Prefix `gw:breaker`'s epoch was prefix `gw`'s record of dependency `epoch`.
        assert_ne!(Keys::new("gw", "epoch").record, epoch_key("gw:breaker"));
        assert_eq!(epoch_key("gw:breaker"), "gw%3Abreaker:epoch");
        assert_eq!(Keys::new("gw", "epoch").record, "gw:breaker:epoch");
    }

    #[test]
    fn a_prefix_without_the_separator_or_the_escape_keeps_its_keys() {
        let keys = Keys::new("toolbreaker", "search:v2");
        assert_eq!(keys.record, "toolbreaker:breaker:search:v2");
        assert_eq!(keys.votes, "toolbreaker:votes:search:v2");
        assert_eq!(keys.lease, "toolbreaker:probe:search:v2");
        assert_eq!(keys.epoch, "toolbreaker:epoch");
        assert_eq!(keys.incarnation, "toolbreaker:incarnation");
        assert_eq!(keys.channel, "toolbreaker:transitions");
        assert_eq!(encode("a%b:c"), "a%25b%3Ac");
    }
}
