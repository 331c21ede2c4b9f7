//! A tool's arguments are its command's options. The input schema is made from the command's
//! clap definition (names, help, choices, types), and a call's arguments become the command
//! line that clap parses, so a tool takes what the CLI takes and refuses what the CLI refuses,
//! in the CLI's words. Paths go through [`Roots`] first.

use std::any::TypeId;
use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::bail;
use clap::{ArgAction, CommandFactory, Parser};
use serde_json::{Map, Value, json};

use super::paths::Roots;
use crate::args::{Cli, Command};

/// How a tool maps onto its command.
pub struct Spec {
    /// The subcommand (`diagnose`).
    pub command: &'static str,
    /// Options always given (`--once`, `--live`).
    pub fixed: &'static [&'static str],
    /// Option ids the tool does not offer (output, exit status, the protocol's stdin).
    pub hidden: &'static [&'static str],
    /// The property that takes inputs as text, if the tool has one, and its description.
    pub text: Option<(&'static str, &'static str)>,
    /// It also takes the VM's configuration as text (`config_text`, for `--config`).
    pub config_text: bool,
    /// Options the tool requires though the command does not (`record`'s `duration`: a call
    /// cannot be stopped with Ctrl-C).
    pub required: &'static [&'static str],
}

/// The property of a configuration given as text.
const CONFIG_TEXT: &str = "config_text";

/// Options no tool offers: the result is always the JSON, there is no page or exit status,
/// and signals and inherited descriptors belong to the server.
const NEVER: &[&str] = &["json", "html", "force", "fail_on", "ready_fd", "help"];

fn offered(spec: &Spec, arg: &clap::Arg) -> bool {
    let id = arg.get_id().as_str();
    !NEVER.contains(&id) && !spec.hidden.contains(&id) && !arg.is_hide_set()
}

fn subcommand(spec: &Spec) -> anyhow::Result<clap::Command> {
    Cli::command()
        .find_subcommand(spec.command)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no command `{}`", spec.command))
}

fn is_path(arg: &clap::Arg) -> bool {
    arg.get_value_parser().type_id() == TypeId::of::<PathBuf>()
}

fn is_flag(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), ArgAction::SetTrue)
}

fn is_many(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append)
}

/// The JSON type of one value of `arg`.
fn value_schema(arg: &clap::Arg) -> Value {
    let choices: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if !choices.is_empty() {
        return json!({"type": "string", "enum": choices});
    }
    let t = arg.get_value_parser().type_id();
    let integer = [
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i32>(),
    ];
    if integer.iter().any(|i| t == *i) {
        json!({"type": "integer"})
    } else if t == TypeId::of::<f64>() {
        json!({"type": "number"})
    } else {
        json!({"type": "string"})
    }
}

/// The input schema of the tool: one property per offered option, named by its id.
pub fn input_schema(spec: &Spec) -> anyhow::Result<Map<String, Value>> {
    let cmd = subcommand(spec)?;
    let mut props = Map::new();
    for arg in cmd.get_arguments().filter(|a| offered(spec, a)) {
        let help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let mut help = help.replace('\n', " ");
        if is_path(arg) {
            help.push_str(" (a path under the server's --root directories)");
        }
        let mut s = if is_flag(arg) {
            json!({"type": "boolean"})
        } else if is_many(arg)
            || arg.is_positional() && arg.get_num_args().is_some_and(|n| n.max_values() > 1)
        {
            json!({"type": "array", "items": value_schema(arg)})
        } else {
            value_schema(arg)
        };
        let default = arg
            .get_default_values()
            .first()
            .and_then(|d| match s["type"].as_str() {
                Some("integer") => d.to_str()?.parse::<i64>().ok().map(|n| json!(n)),
                Some("number") => d.to_str()?.parse::<f64>().ok().map(|n| json!(n)),
                _ => Some(json!(d.to_string_lossy())),
            });
        if let Some(d) = default {
            s["default"] = d;
        }
        s["description"] = json!(help);
        props.insert(arg.get_id().to_string(), s);
    }
    if spec.config_text {
        props.insert(
            CONFIG_TEXT.to_string(),
            json!({"type": "string", "description": "The VM's configuration (libvirt XML, QEMU \
                command line, Proxmox config) as text instead of `config`"}),
        );
    }
    if let Some((name, what)) = spec.text {
        props.insert(
            name.to_string(),
            if name.ends_with('s') {
                json!({"type": "array", "items": {"type": "string"}, "description": what})
            } else {
                json!({"type": "string", "description": what})
            },
        );
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    if !spec.required.is_empty() {
        schema.insert("required".into(), json!(spec.required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    Ok(schema)
}

/// The parsed command of a call, and its inputs given as text.
pub struct Parsed {
    pub command: Command,
    pub texts: Vec<String>,
    /// The configuration given as text (`config_text`).
    pub config_text: Option<String>,
    /// No file was given, only text: the command's file list holds a placeholder to clear.
    pub text_only: bool,
}

/// Parses the call's `args` as the command line of `spec`, each path checked by `roots`.
pub fn parse(spec: &Spec, args: &Map<String, Value>, roots: &Roots) -> anyhow::Result<Parsed> {
    let cmd = subcommand(spec)?;
    let offered_args: Vec<&clap::Arg> = cmd.get_arguments().filter(|a| offered(spec, a)).collect();
    let mut argv: Vec<OsString> = vec!["virtlens".into(), spec.command.into()];
    argv.extend(spec.fixed.iter().map(OsString::from));
    if let Some(missing) = spec.required.iter().find(|r| !args.contains_key(**r)) {
        bail!("`{missing}` is required");
    }
    let mut texts = Vec::new();
    let mut config_text = None;
    let mut positional_given = false;
    for (key, value) in args {
        if spec.config_text && key == CONFIG_TEXT {
            match value {
                Value::String(s) => config_text = Some(s.clone()),
                Value::Null => {}
                other => bail!("`{key}`: expected text, got {other}"),
            }
            continue;
        }
        if spec.text.is_some_and(|(t, _)| t == key) {
            match value {
                Value::String(s) => texts.push(s.clone()),
                Value::Array(items) => {
                    for i in items {
                        let Value::String(s) = i else {
                            bail!("`{key}`: expected text (strings), got {i}");
                        };
                        texts.push(s.clone());
                    }
                }
                Value::Null => {}
                other => bail!("`{key}`: expected text, got {other}"),
            }
            continue;
        }
        let Some(arg) = offered_args.iter().find(|a| a.get_id().as_str() == key) else {
            let names: Vec<String> = offered_args
                .iter()
                .map(|a| a.get_id().to_string())
                .chain(spec.text.map(|(t, _)| t.to_string()))
                .chain(spec.config_text.then(|| CONFIG_TEXT.to_string()))
                .collect();
            bail!(
                "unknown argument `{key}`; this tool takes: {}",
                names.join(", ")
            );
        };
        let values: Vec<&Value> = match value {
            Value::Null => continue,
            Value::Array(items) => items.iter().collect(),
            v => vec![v],
        };
        if is_flag(arg) {
            match value {
                Value::Bool(true) => argv.push(format!("--{}", long(arg)).into()),
                Value::Bool(false) => {}
                other => bail!("`{key}`: expected true or false, got {other}"),
            }
            continue;
        }
        for v in values {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => bail!("`{key}`: expected a string or a number, got {other}"),
            };
            let text: OsString = if is_path(arg) {
                roots.file(&text)?.into()
            } else {
                text.into()
            };
            if arg.is_positional() {
                positional_given = true;
                argv.push(text);
            } else {
                // `--name=value`: a value that starts with `-` stays a value.
                let mut option = OsString::from(format!("--{}=", long(arg)));
                option.push(text);
                argv.push(option);
            }
        }
    }
    // Text alone stands in for the files a command requires: a placeholder, cleared after.
    let text_only = !positional_given && !texts.is_empty();
    if text_only && offered_args.iter().any(|a| a.is_positional()) {
        argv.push("-".into());
    }
    let command = Cli::try_parse_from(argv)
        .map_err(|e| anyhow::anyhow!(in_tool_words(spec, &offered_args, &clap_message(&e))))?
        .command;
    Ok(Parsed {
        command,
        texts,
        config_text,
        text_only,
    })
}

/// Clap's message with the positional arguments named as the tool's properties (`<FILE>...`
/// is `files`, or `texts`).
fn in_tool_words(spec: &Spec, args: &[&clap::Arg], message: &str) -> String {
    let mut out = message.to_string();
    for arg in args.iter().filter(|a| a.is_positional()) {
        let or_text = spec
            .text
            .map(|(t, _)| format!(" (or `{t}`)"))
            .unwrap_or_default();
        let property = format!("`{}`{or_text}", arg.get_id());
        for name in arg.get_value_names().unwrap_or_default() {
            out = out
                .replace(&format!("<{name}>..."), &property)
                .replace(&format!("<{name}>"), &property);
        }
    }
    out
}

fn long(arg: &clap::Arg) -> String {
    arg.get_long()
        .map_or_else(|| arg.get_id().to_string(), str::to_string)
}

/// Clap's message without its `error: ` and the usage lines, which are the CLI's and not the
/// tool's.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let text = text.trim_start_matches("error: ");
    let cut = ["\n\nUsage:", "\n\nFor more information"]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
    text[..cut].trim().to_string()
}
