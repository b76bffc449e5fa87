//! The README's gateway section stays true: its config file and its `mcpServers` entry are read
//! by the gateway's own loaders.

use toolbreaker_gateway::config::{GatewayConfig, Transport};

/// The fenced block of `lang` that follows `heading` in the README.
fn block(heading: &str, lang: &str) -> String {
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find(heading).expect("the section")..];
    let fence = format!("```{lang}\n");
    let start = section.find(&fence).expect("the block") + fence.len();
    let end = start + section[start..].find("```").expect("its end");
    section[start..end].to_owned()
}

#[test]
fn the_readmes_gateway_config_is_a_valid_config() {
    let text = block("## An MCP gateway to deploy", "toml");
    let env = |name: &str| (name == "SEARCH_TOKEN").then(|| "t".to_owned());
    let config = GatewayConfig::from_toml_str_with(&text, env).unwrap();
    let names: Vec<_> = config
        .upstreams
        .iter()
        .map(|u| (u.name.as_str(), u.prefix.as_str()))
        .collect();
    assert_eq!(names, [("search", "search."), ("files", "")]);
    assert!(matches!(
        config.upstreams[1].transport,
        Transport::Stdio { .. }
    ));
    assert!(config.upstreams[1].exposes("read_file") && !config.upstreams[1].exposes("write_file"));
}

#[test]
fn the_readmes_mcp_servers_entry_is_read_as_claude_desktop_writes_it() {
    let text = block("## An MCP gateway to deploy", "json");
    let config = GatewayConfig::from_mcp_servers_json_str(&text).unwrap();
    let Transport::Stdio { command, args, .. } = &config.upstreams[0].transport else {
        panic!("a command entry")
    };
    assert_eq!(command, "toolbreaker-gateway");
    assert!(args.iter().any(|a| a == "--stdio"));
}

#[test]
fn the_readmes_long_running_tool_is_configured_as_it_says() {
    use std::time::Duration;
    let text = block("### Long-running tools", "toml");
    let config = GatewayConfig::from_toml_str_with(&text, |_| None).unwrap();
    let upstream = config.upstream("everything").unwrap();
    assert_eq!(upstream.per_call_timeout, Duration::from_secs(10));
    let tool = &upstream.tools[0];
    assert_eq!(tool.name, "trigger-long-running-operation");
    assert!(tool.own_breaker, "a breaker of its own");
    assert_eq!(tool.per_call_timeout, Some(Duration::from_secs(60)));
    assert_eq!(tool.max_call, Some(Duration::from_secs(300)));
}
