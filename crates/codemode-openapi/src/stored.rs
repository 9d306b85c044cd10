//! The connector's tool specs, kept with their schemas as JSON text: the runtime asks for them
//! once, when it is built, and keeps its own parsed copy; a second parsed copy of a large
//! API's schemas here would cost tens of megabytes for nothing.

use codemode::connector::ToolSpec;
use serde_json::Value;

/// One tool spec with its schemas taken out as text.
#[derive(Debug)]
struct StoredTool {
    spec: ToolSpec,
    input: Box<str>,
    output: Option<Box<str>>,
}

/// Tool specs, handed out whole by [`StoredTools::specs`].
#[derive(Debug)]
pub(crate) struct StoredTools(Vec<StoredTool>);

impl StoredTools {
    /// Keeps `tools`, their schemas as text.
    pub fn new(tools: Vec<ToolSpec>) -> Self {
        StoredTools(
            tools
                .into_iter()
                .map(|mut spec| {
                    let input = std::mem::take(&mut spec.input_schema).to_string().into();
                    let output = spec.output_schema.take().map(|v| v.to_string().into());
                    StoredTool {
                        spec,
                        input,
                        output,
                    }
                })
                .collect(),
        )
    }

    /// The tool specs, schemas parsed back (text written from a value always parses).
    pub fn specs(&self) -> Vec<ToolSpec> {
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap_or_default();
        self.0
            .iter()
            .map(|t| {
                let mut spec = t.spec.clone();
                spec.input_schema = parse(&t.input);
                spec.output_schema = t.output.as_deref().map(parse);
                spec
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::StoredTools;
    use codemode::connector::ToolSpec;
    use serde_json::json;

    #[test]
    fn specs_come_back_as_they_went_in() {
        let mut a = ToolSpec::new("a");
        a.input_schema =
            json!({"type": "object", "properties": {"x": {"type": "number", "maximum": 0.1}}});
        a.output_schema = Some(json!({"type": "array", "items": {"type": "string"}}));
        let b = ToolSpec::new("b");
        let tools = vec![a, b];
        assert_eq!(StoredTools::new(tools.clone()).specs(), tools);
    }
}
