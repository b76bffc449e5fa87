//! `mcp_servers = "servers.json"` in the TOML file: the upstreams of an `mcpServers` JSON file,
//! with breaker and timeout keys set on them by `[upstreams.NAME]` sections naming them.

use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

use super::breakers::{BREAKER_KEYS, Setting, UpstreamBreakers};
use super::error::{GatewayConfigError, path_part};
use super::rules::{backticked, unknown_word};
use super::toml_file::{Doc, entries, string, table};
use super::toml_upstream::{max_call_ms, millis, shorter};
use super::{UpstreamConfig, json};

/// The top-level key that names the file.
pub(super) const KEY: &str = "mcp_servers";

/// The keys a section over an imported server may set, besides the breaker keys.
const OVERLAY_KEYS: [&str; 2] = ["per_call_timeout_ms", "max_call_ms"];

/// The servers of an imported file.
pub(super) struct Imported {
    /// The file, as the TOML file names it (for errors).
    pub(super) shown: String,
    /// Its upstreams, in its order, each with its breaker keys (set by overlays).
    pub(super) upstreams: Vec<(UpstreamConfig, UpstreamBreakers)>,
}

/// Reads the file `mcp_servers` names (relative to the TOML file's folder, else the working
/// directory), when the TOML file has the key.
pub(super) fn read(
    doc: &Doc<'_>,
    root: &DeTable<'_>,
) -> Result<Option<Imported>, GatewayConfigError> {
    let Some((key, value)) = root.get_key_value(KEY) else {
        return Ok(None);
    };
    let line = doc.line(key.span());
    let at = |p: String| doc.err(None, Some(KEY), key.span(), p);
    let written = string(value.get_ref()).map_err(at)?;
    let expanded = doc.expand(written, "", KEY, key.span()).map_err(|e| {
        GatewayConfigError::toml(None, Some(KEY), Some(line), e.problem().to_owned())
    })?;
    if expanded.is_empty() {
        return Err(at(
            "must name an mcpServers JSON file, not be empty".to_owned()
        ));
    }
    let path = match doc.base() {
        Some(base) if Path::new(&expanded).is_relative() => base.join(&expanded),
        _ => PathBuf::from(&expanded),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        at(format!(
            "cannot read the mcpServers file `{}`: {e}",
            written
        ))
    })?;
    let config = json::parse(&text, doc.env()).map_err(|e| e.in_file(&path))?;
    let upstreams = config
        .upstreams
        .into_iter()
        .map(|u| {
            let breakers = UpstreamBreakers {
                name: u.name.clone(),
                line,
                settings: Vec::new(),
                tools: Vec::new(),
            };
            (u, breakers)
        })
        .collect();
    Ok(Some(Imported {
        shown: written.to_owned(),
        upstreams,
    }))
}

/// `[upstreams.NAME]` over the imported server `NAME`: breaker keys, `per_call_timeout_ms` and
/// `max_call_ms`.
pub(super) fn overlay(
    doc: &Doc<'_>,
    name: &Spanned<DeString<'_>>,
    value: &Spanned<DeValue<'_>>,
    imported: &mut Imported,
) -> Result<(), GatewayConfigError> {
    let upstream_name: &str = name.get_ref();
    let section = format!("upstreams.{}", path_part(upstream_name));
    let file = imported.shown.clone();
    let Some((upstream, breakers)) = imported
        .upstreams
        .iter_mut()
        .find(|(u, _)| u.name == upstream_name)
    else {
        unreachable!("overlay() is called for an imported name");
    };
    let body = table(doc, Some("upstreams"), upstream_name, name.span(), value)?;
    breakers.line = doc.line(name.span());
    for (k, v) in entries(body) {
        let key: &str = k.get_ref();
        let at = |p: String| doc.err(Some(&section), Some(key), k.span(), p);
        match key {
            "per_call_timeout_ms" => upstream.per_call_timeout = millis(v.get_ref()).map_err(at)?,
            "max_call_ms" => upstream.max_call = max_call_ms(v.get_ref()).map_err(at)?,
            key if BREAKER_KEYS.contains(&key) => {
                breakers
                    .settings
                    .push(Setting::new(key, v.get_ref(), doc.line(k.span())));
            }
            other => {
                let known = OVERLAY_KEYS.iter().chain(BREAKER_KEYS.iter()).copied();
                return Err(at(format!(
                    "{} cannot be set here: `{upstream_name}` comes from `{file}`, and a section \
                     over it sets only {} and breaker keys ({})",
                    unknown_word(other, known),
                    backticked(OVERLAY_KEYS),
                    backticked(BREAKER_KEYS)
                )));
            }
        }
    }
    if upstream.max_call < upstream.per_call_timeout {
        let problem = shorter(upstream.max_call, upstream.per_call_timeout);
        return Err(doc.err(Some(&section), None, name.span(), problem));
    }
    Ok(())
}

/// The problem with a section that names no imported server and has no `url` or `command` of
/// its own (a misspelt server name, most often), with the nearest server's name.
pub(super) fn names_no_server(name: &str, imported: &Imported) -> String {
    let names = imported.upstreams.iter().map(|(u, _)| u.name.as_str());
    format!(
        "names no server of `{}`: {} is not among its servers, and the section has no `url` or \
         `command` of its own",
        imported.shown,
        unknown_word(name, names)
    )
}
