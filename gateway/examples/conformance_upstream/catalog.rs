//! What the upstream lists and answers, as the wire JSON the MCP conformance suite's server
//! scenarios look for: tool, resource and prompt names, URIs, argument shapes and contents.

use serde_json::{Value, json};

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
/// the pending `server-sse-polling` scenario calls).
pub fn tools() -> Value {
    let none = || json!({"type": "object", "properties": {}});
    let tool = |name: &str, description: &str, schema: Value| json!({"name": name, "description": description, "inputSchema": schema});
    let string = |description: &str| json!({"type": "string", "description": description});
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
            "Sends three info log messages, 50 ms apart, while it runs",
            none()
        ),
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
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "type": "object",
                        "properties": {
                            "street": {"type": "string"},
                            "city": {"type": "string"}
                        }
                    }
                },
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"}
                },
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
