//! One `[pools.NAME]` table of a configuration file: its member groups and its panic rule,
//! checked by [`PoolBuilder`], with every error naming the pool and the file's key.

use toml::de::DeValue;

use crate::config::Problem;
use crate::registry::config::RegistryConfig;
use crate::registry::pool_spec::PoolBuilder;
use crate::registry::toml::error::ConfigFileError;

const KEYS: &str = "`groups`, `max_ejected`, `fail_closed`";

/// `config` with the pool `name` that `value` describes, or the error naming the pool and key.
pub(super) fn pool(
    config: RegistryConfig,
    name: &str,
    value: &DeValue<'_>,
) -> Result<RegistryConfig, ConfigFileError> {
    let error =
        |key: Option<&str>, problem: String| ConfigFileError::at(None, key, problem).in_pool(name);
    let DeValue::Table(table) = value else {
        return Err(error(
            None,
            format!("must be a table of settings, found {}", value.type_str()),
        ));
    };
    let mut builder = PoolBuilder::new(name);
    let mut grouped = false;
    for (key, value) in table {
        let key: &str = key.get_ref();
        match (key, value.get_ref()) {
            ("groups", DeValue::Array(groups)) => {
                grouped = true;
                for group in groups {
                    let DeValue::Array(members) = group.get_ref() else {
                        return Err(error(Some(key), groups_shape()));
                    };
                    let mut names = Vec::new();
                    for member in members {
                        let DeValue::String(member) = member.get_ref() else {
                            return Err(error(Some(key), groups_shape()));
                        };
                        names.push(member.to_string());
                    }
                    builder = builder.group(names);
                }
            }
            ("groups", _) => return Err(error(Some(key), groups_shape())),
            ("max_ejected", DeValue::Float(number)) => {
                let fraction = number.as_str().replace('_', "").parse::<f64>();
                builder = builder.max_ejected(fraction.unwrap_or(f64::NAN));
            }
            ("max_ejected", DeValue::Integer(number)) => {
                let fraction = number.as_str().replace('_', "").parse::<f64>();
                builder = builder.max_ejected(fraction.unwrap_or(f64::NAN));
            }
            ("max_ejected", other) => {
                return Err(error(
                    Some(key),
                    format!("must be a number (such as 0.5), not a {}", other.type_str()),
                ));
            }
            ("fail_closed", DeValue::Boolean(on)) => builder = builder.fail_closed(*on),
            ("fail_closed", other) => {
                return Err(error(
                    Some(key),
                    format!("must be true or false, not a {}", other.type_str()),
                ));
            }
            (other, _) => {
                return Err(error(Some(other), format!("unknown key; expected {KEYS}")));
            }
        }
    }
    if !grouped {
        return Err(error(
            Some("groups"),
            format!("is missing; {}", groups_shape()),
        ));
    }
    config.pool(builder).map_err(|e| {
        let problem = match (e.field(), e.problem()) {
            ("groups", Problem::Duplicate) => {
                "names a member twice; a member belongs to one group".to_owned()
            }
            ("groups", _) => "must hold at least one group, and each group a member".to_owned(),
            _ => "must be a fraction from 0 to 1".to_owned(),
        };
        error(Some(e.field()), problem)
    })
}

/// What `groups` must be, in words.
fn groups_shape() -> String {
    "`groups` must be an array of groups, each an array of dependency names, such as \
     [[\"a\", \"b\"], [\"c\"]]"
        .to_owned()
}
