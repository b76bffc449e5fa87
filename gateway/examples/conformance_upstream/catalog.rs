//! What the upstream lists and answers, as the wire JSON the MCP conformance suite's server
//! scenarios look for: tool, resource and prompt names, URIs, argument shapes and contents.

use serde_json::{Map, Value, json};

/// A 1x1 red PNG.
pub const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// 2 ms of silence: 8 kHz, 8-bit mono PCM WAV.
pub const WAV: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YRAAAACAgICAgICAgICAgICAgICA";

/// The template of `resources/templates/list`; `{id}` is any non-empty path segment.
pub const TEMPLATE: &str = "test://template/{id}/data";

/// A tool result of one text content.
pub fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// A tool result of one text content with `isError: true`.
pub fn error(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// An object schema with `properties` and `required`.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// `tools/list`: every tool of the suite's server scenarios (plus `test_reconnection`, which
/// the pending `server-sse-polling` scenario calls), at both protocol eras.
pub fn tools() -> Value {
    let none = || json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str, schema: Value| json!({"name": name, "description": description, "inputSchema": schema});
    let string = |description: &str| json!({"type": "string", "description": description});
    let asks = |name: &str, description: &str| tool(name, description, none());
    json!([
        tool("test_simple_text", "Returns one text content", none()),
        tool(
            "test_image_content",
            "Returns one PNG image content",
            none()
        ),
        tool(
            "test_audio_content",
            "Returns one WAV audio content",
            none()
        ),
        tool(
            "test_embedded_resource",
            "Returns one embedded text resource",
            none()
        ),
        tool(
            "test_multiple_content_types",
            "Returns text, image and an embedded resource",
            none()
        ),
        tool(
            "test_tool_with_logging",
            "Sends three info log messages, 50 ms apart, while it runs (on 2026-07-28 only when \
             the request's _meta asks for a log level)",
            none()
        ),
        tool("test_logging_tool", "As test_tool_with_logging", none()),
        tool(
            "test_error_handling",
            "Always answers isError: true",
            none()
        ),
        tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100, 50 ms apart, when given a progress token",
            none()
        ),
        tool(
            "test_long_operation",
            "Runs `duration_ms` (default 1000), reporting progress every `every_ms` (default 0: \
             never) when given a progress token (the gateway's timeout tests)",
            object(
                json!({
                    "duration_ms": {"type": "integer", "description": "How long it runs, in ms"},
                    "every_ms": {"type": "integer", "description": "The pause between its progress notifications, in ms"}
                }),
                &[]
            )
        ),
        tool(
            "test_progress_and_logs",
            "Reports progress 1 to `count` of `count` (default 5), each followed by an info log \
             message, with no pause, then answers (the gateway's ordering tests)",
            object(
                json!({"count": {"type": "integer", "description": "How many progress notifications"}}),
                &[]
            )
        ),
        tool(
            "test_sampling",
            "Asks the client for an LLM completion of `prompt` (sampling/createMessage)",
            object(
                json!({"prompt": string("The prompt to send to the LLM")}),
                &["prompt"]
            )
        ),
        tool(
            "test_elicitation",
            "Asks the client for a username and an email (elicitation/create)",
            object(
                json!({"message": string("The message to show the user")}),
                &["message"]
            )
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Elicits fields of every primitive type, each with a default (SEP-1034)",
            none()
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Elicits the five kinds of enum field (SEP-1330)",
            none()
        ),
        asks(
            "test_input_required_result_elicitation",
            "Asks the client's name (elicitation, key user_name); answers Hello, NAME!"
        ),
        asks(
            "test_input_required_result_sampling",
            "Asks the client's LLM for the capital of France (sampling, key capital_question)"
        ),
        asks(
            "test_input_required_result_list_roots",
            "Asks the client's roots (roots/list, key client_roots) and names them"
        ),
        asks(
            "test_input_required_result_request_state",
            "Asks for a confirmation (key confirm) with a requestState it verifies on the retry"
        ),
        asks(
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a sampled greeting and the roots at once, with a requestState"
        ),
        asks(
            "test_input_required_result_multi_round",
            "Asks a name (step1), then a colour (step2), a new requestState each round"
        ),
        asks(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation with a requestState; a state it did not issue is refused"
        ),
        asks(
            "test_input_required_result_capabilities",
            "Asks for elicitation, sampling and roots, each only if the request declares the \
             client capability"
        ),
        asks(
            "test_missing_capability",
            "Needs sampling: refused (-32021 on 2026-07-28) unless the client declares it"
        ),
        asks(
            "test_streaming_elicitation",
            "Asks for a confirmation: in band on a session, as an input_required result on \
             2026-07-28"
        ),
        asks(
            "test_trigger_tool_change",
            "Announces a tools/list change (to subscriptions/listen streams, and to this session)"
        ),
        asks(
            "test_trigger_prompt_change",
            "Announces a prompts/list change (to subscriptions/listen streams, and to this \
             session)"
        ),
        tool(
            "test_trigger_resource_update",
            "Announces an update of resource `uri` (default test://watched-resource) to the \
             listen streams that asked for it, and to this session if it subscribed",
            object(
                json!({"uri": string("The URI of the updated resource")}),
                &[]
            )
        ),
        tool(
            "test_custom_header",
            "Echoes `region`, which an HTTP client also sends as the Mcp-Param-Region header \
             (SEP-2243)",
            object(
                json!({"region": {
                    "type": "string",
                    "description": "A region",
                    "x-mcp-header": "Region"
                }}),
                &["region"]
            )
        ),
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": {
                            "street": {"type": "string"},
                            "city": {"type": "string"}
                        }
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {
                    "properties": {"contactMethod": {"const": "phone"}},
                    "required": ["contactMethod"]
                },
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            })
        ),
        tool(
            super::sessions::RECONNECTION_TOOL,
            "Closes its own event stream mid-call and answers once the client has resumed it \
             with Last-Event-ID (SEP-1699)",
            none()
        ),
    ])
}

/// The content of `test_embedded_resource`.
pub fn embedded_resource() -> Value {
    json!({
        "type": "resource",
        "resource": {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content."
        }
    })
}

/// An image content of [`PNG`].
pub fn image() -> Value {
    json!({"type": "image", "data": PNG, "mimeType": "image/png"})
}

/// The contents of `test_multiple_content_types`.
pub fn mixed_content() -> Value {
    json!([
        {"type": "text", "text": "Multiple content types test:"},
        image(),
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": "{\"test\":\"data\",\"value\":123}"
            }
        }
    ])
}

/// `requestedSchema` of `test_elicitation`.
pub fn user_schema() -> Value {
    object(
        json!({
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        }),
        &["username", "email"],
    )
}

/// `requestedSchema` of `test_elicitation_sep1034_defaults`: a default for each primitive type.
pub fn defaults_schema() -> Value {
    object(
        json!({
            "name": {"type": "string", "description": "Name", "default": "John Doe"},
            "age": {"type": "integer", "description": "Age", "default": 30},
            "score": {"type": "number", "description": "Score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "Status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verified", "default": true}
        }),
        &[],
    )
}

/// `requestedSchema` of `test_elicitation_sep1330_enums`: the five kinds of enum.
pub fn enums_schema() -> Value {
    let titled = |prefix: &str, titles: [&str; 3]| {
        titles
            .iter()
            .enumerate()
            .map(|(i, title)| json!({"const": format!("{prefix}{}", i + 1), "title": title}))
            .collect::<Vec<_>>()
    };
    object(
        json!({
            "untitledSingle": {
                "type": "string",
                "description": "Untitled single-select",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Titled single-select",
                "oneOf": titled("value", ["First Option", "Second Option", "Third Option"])
            },
            "legacyEnum": {
                "type": "string",
                "description": "Legacy titled enum (enumNames, deprecated)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Untitled multi-select",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "description": "Titled multi-select",
                "items": {
                    "anyOf": titled("value", ["First Choice", "Second Choice", "Third Choice"])
                }
            }
        }),
        &[],
    )
}

/// `resources/list`: the direct resources.
pub fn resources() -> Value {
    let resource = |uri: &str, name: &str, description: &str, mime: &str| json!({"uri": uri, "name": name, "description": description, "mimeType": mime});
    json!([
        resource(
            "test://static-text",
            "static-text",
            "A static text resource",
            "text/plain"
        ),
        resource(
            "test://static-binary",
            "static-binary",
            "A static binary resource (a PNG image)",
            "image/png"
        ),
        resource(
            "test://watched-resource",
            "watched-resource",
            "A resource clients may subscribe to",
            "text/plain"
        ),
    ])
}

/// `resources/templates/list`.
pub fn resource_templates() -> Value {
    json!([{
        "uriTemplate": TEMPLATE,
        "name": "template-data",
        "description": "JSON data for the id in the URI",
        "mimeType": "application/json"
    }])
}

/// The contents of `uri` for `resources/read`, if there is such a resource.
pub fn read(uri: &str) -> Option<Value> {
    let text = |mime: &str, text: &str| json!({"uri": uri, "mimeType": mime, "text": text});
    let contents = match uri {
        "test://static-text" => text(
            "text/plain",
            "This is the content of the static text resource.",
        ),
        "test://watched-resource" => text("text/plain", "The watched resource's content."),
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")?;
            if id.is_empty() || id.contains('/') {
                return None;
            }
            let data =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            text("application/json", &data.to_string())
        }
    };
    Some(json!([contents]))
}

/// `prompts/list`.
pub fn prompts() -> Value {
    let argument = |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
    json!([
        {"name": "test_simple_prompt", "description": "A prompt without arguments"},
        {
            "name": "test_prompt_with_arguments",
            "description": "A prompt that quotes its two arguments",
            "arguments": [
                argument("arg1", "First test argument"),
                argument("arg2", "Second test argument")
            ]
        },
        {
            "name": "test_prompt_with_embedded_resource",
            "description": "A prompt that embeds the resource it is given",
            "arguments": [argument("resourceUri", "URI of the resource to embed")]
        },
        {"name": "test_prompt_with_image", "description": "A prompt with an image"},
        {
            "name": "test_input_required_result_prompt",
            "description": "A prompt that first asks the client for its context (elicitation, \
                            key user_context)"
        },
    ])
}

/// The messages of prompt `name` given `argument` (empty when absent), if there is such a prompt.
pub fn prompt(name: &str, argument: impl Fn(&str) -> String) -> Option<Value> {
    let user = |content: Value| json!({"role": "user", "content": content});
    let text = |text: &str| json!({"type": "text", "text": text});
    let messages = match name {
        "test_simple_prompt" => json!([user(text("This is a simple prompt for testing."))]),
        "test_prompt_with_arguments" => {
            let quoted = format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                argument("arg1"),
                argument("arg2")
            );
            json!([user(text(&quoted))])
        }
        "test_prompt_with_embedded_resource" => json!([
            user(json!({
                "type": "resource",
                "resource": {
                    "uri": argument("resourceUri"),
                    "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."
                }
            })),
            user(text("Please process the embedded resource above.")),
        ]),
        "test_prompt_with_image" => {
            json!([user(image()), user(text("Please analyze the image above.")),])
        }
        _ => return None,
    };
    Some(messages)
}

/// `completion/complete` candidates for argument `argument` of prompt or template `of`.
pub fn completions(of: &str, argument: &str) -> &'static [&'static str] {
    match (of, argument) {
        ("test_prompt_with_arguments", _) => &["paris", "park", "party", "test", "testing"],
        (TEMPLATE, "id") => &["1", "12", "123", "1234"],
        _ => &[],
    }
}

/// An `elicitation/create` request (wire JSON) for an object of `properties`.
fn elicit(message: &str, schema: Value) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}})
}

/// A `sampling/createMessage` request (wire JSON) for one user `prompt`.
fn sample(prompt: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": max_tokens
        }
    })
}

/// A `roots/list` request (wire JSON).
fn list_roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

/// What a tool or prompt asks the client (sampling, elicitation, roots) before it answers:
/// in band on a 2025-11-25 session, as `input_required` results on 2026-07-28 (SEP-2322).
pub struct Asks {
    /// The rounds of questions, each `(key, request as wire JSON)`, the client answering a
    /// round's together before the next is asked.
    pub rounds: Vec<Vec<(&'static str, Value)>>,
    /// Whether the rounds carry a `requestState` the retry must echo (2026-07-28).
    pub with_state: bool,
    /// Whether a question whose capability the client did not declare is left out, rather than
    /// the call refused.
    pub optional: bool,
}

impl Asks {
    fn one(key: &'static str, request: Value) -> Asks {
        Asks {
            rounds: vec![vec![(key, request)]],
            with_state: false,
            optional: false,
        }
    }

    fn with_state(mut self) -> Asks {
        self.with_state = true;
        self
    }
}

/// A schema of one required property `name` of `kind` (`string`, `boolean`).
fn one_field(name: &str, kind: &str) -> Value {
    object(json!({name: {"type": kind}}), &[name])
}

/// What tool `name` asks the client, given its `argument`s; `None` for a tool that asks nothing.
pub fn tool_asks(name: &str, argument: impl Fn(&str) -> String) -> Option<Asks> {
    let confirm = || elicit("Please confirm", one_field("ok", "boolean"));
    let user_name = || elicit("What is your name?", one_field("name", "string"));
    let asks = match name {
        "test_sampling" => Asks::one("sampling", sample(&argument("prompt"), 100)),
        "test_elicitation" => Asks::one("user", elicit(&argument("message"), user_schema())),
        "test_elicitation_sep1034_defaults" => Asks::one(
            "defaults",
            elicit("Please review the defaults", defaults_schema()),
        ),
        "test_elicitation_sep1330_enums" => Asks::one(
            "choices",
            elicit("Please choose among the options", enums_schema()),
        ),
        "test_input_required_result_elicitation" => Asks::one("user_name", user_name()),
        "test_input_required_result_sampling" => Asks::one(
            "capital_question",
            sample("What is the capital of France?", 100),
        ),
        "test_input_required_result_list_roots" => Asks::one("client_roots", list_roots()),
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => {
            Asks::one("confirm", confirm()).with_state()
        }
        "test_input_required_result_multiple_inputs" => Asks {
            rounds: vec![vec![
                ("user_name", user_name()),
                ("greeting", sample("Generate a greeting", 50)),
                ("client_roots", list_roots()),
            ]],
            with_state: true,
            optional: false,
        },
        "test_input_required_result_multi_round" => Asks {
            rounds: vec![
                vec![(
                    "step1",
                    elicit("Step 1: What is your name?", one_field("name", "string")),
                )],
                vec![(
                    "step2",
                    elicit(
                        "Step 2: What is your favorite color?",
                        one_field("color", "string"),
                    ),
                )],
            ],
            with_state: true,
            optional: false,
        },
        "test_input_required_result_capabilities" => Asks {
            rounds: vec![vec![
                ("user_name", user_name()),
                ("greeting", sample("Generate a greeting", 50)),
                ("client_roots", list_roots()),
            ]],
            with_state: false,
            optional: true,
        },
        "test_missing_capability" => Asks::one("greeting", sample("Say hello", 50)),
        "test_streaming_elicitation" => Asks::one("confirm", confirm()),
        _ => return None,
    };
    Some(asks)
}

/// What prompt `name` asks the client; `None` for a prompt that asks nothing.
pub fn prompt_asks(name: &str) -> Option<Asks> {
    match name {
        "test_input_required_result_prompt" => Some(Asks::one(
            "user_context",
            elicit(
                "What context should the prompt use?",
                one_field("context", "string"),
            ),
        )),
        _ => None,
    }
}

/// The first text in a sampling answer's `content` (one block, or a list of them).
fn sampled_text(answer: &Value) -> String {
    let content = &answer["content"];
    let blocks = content
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![content.clone()]);
    let text = blocks.iter().find_map(|block| block["text"].as_str());
    text.unwrap_or_default().to_owned()
}

/// `action=..., content={...}` of an elicitation answer.
fn elicited(answer: &Value) -> String {
    let action = answer["action"].as_str().unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or(Value::Null);
    format!("action={action}, content={content}")
}

/// Field `field` of an accepted elicitation answer, as text; `None` when declined or absent.
fn elicited_field(answer: &Value, field: &str) -> Option<String> {
    if answer["action"] != "accept" {
        return None;
    }
    match &answer["content"][field] {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// The URIs of a `roots/list` answer.
fn root_uris(answer: &Value) -> String {
    let roots = answer["roots"].as_array().cloned().unwrap_or_default();
    let uris: Vec<&str> = roots
        .iter()
        .filter_map(|root| root["uri"].as_str())
        .collect();
    if uris.is_empty() {
        "none".into()
    } else {
        uris.join(", ")
    }
}

/// The result of tool `name` (one of [`tool_asks`]) from the client's `answers` (key -> wire
/// JSON of the answer).
pub fn tool_answered(name: &str, answers: &Map<String, Value>) -> Value {
    let answer = |key: &str| answers.get(key).cloned().unwrap_or(Value::Null);
    match name {
        "test_sampling" => text(&format!(
            "LLM response: {}",
            sampled_text(&answer("sampling"))
        )),
        "test_elicitation" => text(&format!("User response: {}", elicited(&answer("user")))),
        "test_elicitation_sep1034_defaults" => text(&format!(
            "Elicitation completed: {}",
            elicited(&answer("defaults"))
        )),
        "test_elicitation_sep1330_enums" => text(&format!(
            "Elicitation completed: {}",
            elicited(&answer("choices"))
        )),
        "test_input_required_result_elicitation" => {
            match elicited_field(&answer("user_name"), "name") {
                Some(name) => text(&format!("Hello, {name}!")),
                None => text(&format!(
                    "No name given: {}",
                    elicited(&answer("user_name"))
                )),
            }
        }
        "test_input_required_result_sampling" | "test_missing_capability" => {
            let key = if name == "test_missing_capability" {
                "greeting"
            } else {
                "capital_question"
            };
            text(&format!("LLM response: {}", sampled_text(&answer(key))))
        }
        "test_input_required_result_list_roots" => text(&format!(
            "Client roots: {}",
            root_uris(&answer("client_roots"))
        )),
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => text(&format!(
            "state-ok: the requestState was verified; confirmation: {}",
            elicited(&answer("confirm"))
        )),
        "test_input_required_result_multiple_inputs"
        | "test_input_required_result_capabilities" => {
            let mut parts = Vec::new();
            if let Some(user) = answers.get("user_name") {
                let who = elicited_field(user, "name").unwrap_or_else(|| "(declined)".into());
                parts.push(format!("name: {who}"));
            }
            if let Some(greeting) = answers.get("greeting") {
                parts.push(format!("greeting: {}", sampled_text(greeting)));
            }
            if let Some(roots) = answers.get("client_roots") {
                parts.push(format!("roots: {}", root_uris(roots)));
            }
            text(&format!("Inputs received: {}", parts.join("; ")))
        }
        "test_input_required_result_multi_round" => {
            let name = elicited_field(&answer("step1"), "name");
            let color = elicited_field(&answer("step2"), "color");
            text(&format!(
                "Multi-round completed: name={}, color={}",
                name.unwrap_or_else(|| "(declined)".into()),
                color.unwrap_or_else(|| "(declined)".into())
            ))
        }
        "test_streaming_elicitation" => {
            text(&format!("User response: {}", elicited(&answer("confirm"))))
        }
        _ => error(&format!("{name} asks nothing")),
    }
}

/// The messages of prompt `name` (one of [`prompt_asks`]) from the client's `answers`.
pub fn prompt_answered(name: &str, answers: &Map<String, Value>) -> Value {
    let answer = answers.get("user_context").cloned().unwrap_or(Value::Null);
    let context = elicited_field(&answer, "context").unwrap_or_else(|| "(none given)".into());
    let said = format!("{name}: answer using this context: {context}");
    json!([{"role": "user", "content": {"type": "text", "text": said}}])
}
