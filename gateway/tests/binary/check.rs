//! `--check`: the file validated and printed resolved with its secrets `<redacted>`, names
//! matching no tool warned of; and a reload that changes only breaker keys names them.

use crate::process::{Outcome, TempFile, check, gateway_command, within};
use crate::secrets::{KEY, VAR, Watched};
use crate::upstream::{Counted, STDIO_UPSTREAM};

/// Runs `--check` on a file holding `config`: its exit code, stdout and stderr.
async fn run_check(config: &str) -> Result<(Option<i32>, String, String), String> {
    let file = TempFile::new("toml", config)?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    let mut command = gateway_command(&["--check", "--config", path]);
    command.env(VAR, KEY);
    let out = within("--check to finish", command.output())
        .await?
        .map_err(|e| format!("cannot run the gateway: {e}"))?;
    Ok((
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

pub async fn check_prints_the_resolved_config_redacted_and_warns_of_unknown_tool_names() -> Outcome
{
    let (up, _calls) = Counted::serve().await;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let me = me.to_str().ok_or("this binary's path is not UTF-8")?;
    let config = format!(
        "[default]\ncooldown_ms = 7000\n\
         [upstreams.up]\nurl = \"{up}\"\nheaders = {{ Authorization = \"Bearer ${{{VAR}}}\" }}\n\
         deny = [\"fial\"]\n[upstreams.up.tools.nosuch]\ncooldown_ms = 1000\n\
         [upstreams.narrow]\nurl = \"{up}\"\nallow = [\"ech\"]\n\
         [upstreams.child]\ncommand = {me:?}\nargs = [\"--key=${{{VAR}}}\"]\n\
         env = {{ {STDIO_UPSTREAM} = \"1\" }}\n"
    );
    let (code, stdout, stderr) = run_check(&config).await?;
    check(
        code == Some(0),
        format!("a valid file exits with 0, not {code:?}: {stderr}"),
    )?;
    check(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        format!("--check shows the key:\n{stdout}\n{stderr}"),
    )?;
    let resolved: serde_json::Value =
        serde_json::from_str(&stdout).map_err(|e| format!("stdout is not JSON ({e}): {stdout}"))?;
    let up = &resolved["upstreams"][0];
    check(
        up["name"] == "up" && up["headers"]["Authorization"] == "<redacted>",
        format!("the header is not redacted: {up}"),
    )?;
    check(
        up["breaker"]["cooldown_ms"] == 7000 && up["tools"][0]["breaker"]["cooldown_ms"] == 1000,
        format!("the breakers are not resolved: {up}"),
    )?;
    let child = &resolved["upstreams"][2];
    check(
        child["args"][0] == "--key=<redacted>" && child["env"][STDIO_UPSTREAM] == "<redacted>",
        format!("the child's args and env are not redacted: {child}"),
    )?;
    for warning in [
        "`deny` names `fial`, which upstream `up` does not list (did you mean `fail`?)",
        "[upstreams.up.tools.nosuch] names `nosuch`, which upstream `up` does not list",
        "`allow` names `ech`, which upstream `narrow` does not list (did you mean `echo`?)",
    ] {
        check(
            stderr.matches(warning).count() == 1,
            format!("--check does not warn `{warning}` once:\n{stderr}"),
        )?;
    }
    Ok(())
}

pub async fn check_refuses_a_bad_file_with_exit_code_1() -> Outcome {
    let (code, stdout, stderr) =
        run_check("[upstreams.a]\nurl = \"http://127.0.0.1:9/mcp\"\ncooldown = 5\n").await?;
    check(
        code == Some(1),
        format!("a bad file exits with 1, not {code:?}: {stderr}"),
    )?;
    check(stdout.is_empty(), format!("nothing on stdout: {stdout}"))?;
    check(
        stderr.contains(
            "[upstreams.a] cooldown: unknown key `cooldown` (did you mean `cooldown_ms`?)",
        ),
        format!("the usual error: {stderr}"),
    )
}

pub async fn a_reload_that_changes_only_breaker_keys_names_them() -> Outcome {
    let (up, _calls) = Counted::serve().await;
    let before = format!("[upstreams.up]\nurl = \"{up}\"\ncooldown_ms = 1000\n");
    let file = TempFile::new("toml", &before)?;
    let path = file
        .path()
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?;
    let mut gateway = Watched::start(&["--config", path]).await?;
    std::fs::write(file.path(), before.replace("1000", "2000")).map_err(|e| e.to_string())?;
    let pid = gateway.child.id().ok_or("the gateway has exited")?;
    crate::process::send_signal(pid, "HUP")?;
    let reloaded = gateway
        .line_when("the reload", |l| l.contains("reloaded"))
        .await?;
    gateway.stop().await?;
    check(
        reloaded.contains("changed=[]") && reloaded.contains("breakers=[\"up\"]"),
        format!("the reload does not name the breaker it changed: {reloaded}"),
    )
}
