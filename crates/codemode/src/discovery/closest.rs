//! The messages for a name that does not exist: which connector, which name, and the closest
//! existing names (edit distance, compared in lower case without `_`, `-` or `$`). They read
//! as the sandbox's own (`codemode-quickjs`'s glue), so an executor that leaves the check to
//! the host gives the model the same text.

/// The longest unknown name an error repeats, in characters; longer ones are cut with `…`.
pub const MAX_NAME_CHARS: usize = 100;

/// What the model is told to use when no name is close.
const SEARCH_HINT: &str = "codemode.search finds tools by what they do";

/// `name` cut to [`MAX_NAME_CHARS`] characters.
pub fn clip_name(name: &str) -> String {
    match name.char_indices().nth(MAX_NAME_CHARS) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_string(),
    }
}

/// What a name compares as: lower case, without `_`, `-` or `$` (`createTask` is
/// `create_task`).
fn folded(name: &str) -> Vec<char> {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '$'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Levenshtein distance, stopping at `limit + 1`.
fn distance(a: &[char], b: &[char], limit: usize) -> usize {
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = vec![i + 1];
        let mut best = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let d = (previous[j + 1] + 1)
                .min(row[j] + 1)
                .min(previous[j] + usize::from(ca != cb));
            row.push(d);
            best = best.min(d);
        }
        if best > limit {
            return limit + 1;
        }
        previous = row;
    }
    previous[b.len()]
}

/// The names closest to `wanted` (at most three, closest first, ties in `names`' order):
/// within a third of the longer name's length, or one containing the other (four characters
/// or more). None when nothing is close.
pub fn closest<'a>(wanted: &str, names: &[&'a str]) -> Vec<&'a str> {
    let w = folded(&clip_name(wanted));
    let mut found: Vec<(usize, usize)> = names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let n = folded(name);
            let limit = (w.len().max(n.len()) / 3).max(1);
            let mut d = distance(&w, &n, limit);
            let contains = |a: &[char], b: &[char]| a.windows(b.len()).any(|x| x == b);
            if d > limit && w.len() >= 4 && n.len() >= 4 && (contains(&n, &w) || contains(&w, &n)) {
                d = limit;
            }
            (d <= limit).then_some((d, i))
        })
        .collect();
    found.sort();
    found.into_iter().take(3).map(|(_, i)| names[i]).collect()
}

/// `a`, `a or b`, `a, b or c`.
fn either(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// Why `connector.method` cannot be called: `methods` are the connector's (none when it is not
/// a connector), `connectors` every connector's name, `unavailable` the reason when the
/// connector failed to start.
pub fn not_a_method(
    connector: &str,
    method: &str,
    methods: Option<&[&str]>,
    connectors: &[&str],
    unavailable: Option<&str>,
) -> String {
    let method = clip_name(method);
    if let Some(reason) = unavailable {
        return format!("connector {connector} failed to start: {reason}");
    }
    let Some(methods) = methods else {
        let connector = clip_name(connector);
        let near = closest(&connector, connectors);
        let guess = match near.first() {
            Some(g) => format!("; did you mean {g}?"),
            None => ".".to_string(),
        };
        return format!(
            "{connector} is not a connector{guess} The connectors are: {}; {SEARCH_HINT}",
            connectors.join(", ")
        );
    };
    let head = format!("{connector}.{method} is not a method of connector {connector}");
    let near = closest(&method, methods);
    if !near.is_empty() {
        let paths: Vec<String> = near.iter().map(|m| format!("{connector}.{m}")).collect();
        return format!(
            "{head}. Did you mean {}? ({SEARCH_HINT}; codemode.describe(\"{}\") shows its input)",
            either(&paths),
            paths[0]
        );
    }
    let shown = if methods.len() > 12 {
        format!("{}, …", methods[..12].join(", "))
    } else {
        methods.join(", ")
    };
    let has = match methods.len() {
        0 => "it has no methods".to_string(),
        1 => format!("its 1 method: {shown}"),
        n => format!("its {n} methods: {shown}"),
    };
    format!("{head} ({has}); {SEARCH_HINT}, codemode.describe(\"{connector}\") lists their inputs")
}

#[cfg(test)]
mod tests {
    use super::*;

    const METHODS: &[&str] = &["list_tasks", "create_task", "complete_task", "add_note"];

    /// Connector, method, the connector's methods (if it has any), why it is unavailable (if
    /// it is), and the message wanted.
    type Case = (
        &'static str,
        &'static str,
        Option<&'static [&'static str]>,
        Option<&'static str>,
        String,
    );

    #[test]
    fn each_unknown_name_is_answered_with_the_closest_existing_ones() {
        let connectors = ["tasks", "state"];
        let table: Vec<Case> = vec![
            ("tasks", "create_tasks", Some(METHODS), None, format!("tasks.create_tasks is not a method of connector tasks. Did you mean tasks.create_task? ({SEARCH_HINT}; codemode.describe(\"tasks.create_task\") shows its input)")),
            ("tasks", "createTask", Some(METHODS), None, format!("tasks.createTask is not a method of connector tasks. Did you mean tasks.create_task? ({SEARCH_HINT}; codemode.describe(\"tasks.create_task\") shows its input)")),
            ("tasks", "frobnicate", Some(METHODS), None, format!("tasks.frobnicate is not a method of connector tasks (its 4 methods: list_tasks, create_task, complete_task, add_note); {SEARCH_HINT}, codemode.describe(\"tasks\") lists their inputs")),
            ("task", "list_tasks", None, None, format!("task is not a connector; did you mean tasks? The connectors are: tasks, state; {SEARCH_HINT}")),
            ("t", "x", None, Some("the server asked for sign-in"), "connector t failed to start: the server asked for sign-in".to_string()),
        ];
        for (connector, method, methods, unavailable, want) in table {
            assert_eq!(
                not_a_method(connector, method, methods, &connectors, unavailable),
                want
            );
        }
    }

    #[test]
    fn a_name_of_ten_thousand_characters_is_cut_in_the_message() {
        let long = "x".repeat(10_000);
        let message = not_a_method("tasks", &long, Some(METHODS), &["tasks"], None);
        assert!(message.chars().count() < 400, "{}", message.len());
        assert!(message.contains(&format!("tasks.{}… is not a method", "x".repeat(100))));
    }
}
