//! A hundred requests a model would make of four real MCP servers, each with the method it
//! means, written by hand in everyday words rather than copied from the tool descriptions.
//!
//! Connectors: `everything` (`@modelcontextprotocol/server-everything`), `filesystem`
//! (`@modelcontextprotocol/server-filesystem`), `memory` (`@modelcontextprotocol/server-memory`)
//! and `browser` (`@playwright/mcp`, by Microsoft). `browser_run_code_unsafe` is not among them:
//! the MCP connector leaves out tools that take code to run.

/// (query, `connector.method` meant).
pub const MCP_CASES: &[(&str, &str)] = &[
    // everything: a demo server of small, unrelated tools.
    ("add two numbers", "everything.get_sum"),
    ("what is 3 plus 4", "everything.get_sum"),
    ("calculate the total of a and b", "everything.get_sum"),
    ("repeat my message back to me", "everything.echo"),
    ("echo a string", "everything.echo"),
    ("show the environment variables", "everything.get_env"),
    ("print env vars of the server", "everything.get_env"),
    (
        "compress a file with gzip",
        "everything.gzip_file_as_resource",
    ),
    ("zip some data", "everything.gzip_file_as_resource"),
    ("get a small image", "everything.get_tiny_image"),
    ("fetch the logo picture", "everything.get_tiny_image"),
    (
        "turn logging on or off",
        "everything.toggle_simulated_logging",
    ),
    (
        "enable random log messages",
        "everything.toggle_simulated_logging",
    ),
    (
        "start a long task that reports progress",
        "everything.trigger_long_running_operation",
    ),
    (
        "get structured data for a location",
        "everything.get_structured_content",
    ),
    (
        "research a topic in depth",
        "everything.simulate_research_query",
    ),
    ("links to resources", "everything.get_resource_links"),
    (
        "reference a resource by its id",
        "everything.get_resource_reference",
    ),
    (
        "enable updates to subscribers",
        "everything.toggle_subscriber_updates",
    ),
    (
        "a message with annotations",
        "everything.get_annotated_message",
    ),
    // filesystem
    ("what files are in this folder", "filesystem.list_directory"),
    (
        "show the contents of a directory",
        "filesystem.list_directory",
    ),
    ("ls a folder", "filesystem.list_directory"),
    ("read a text file", "filesystem.read_text_file"),
    (
        "open a file and show me what it says",
        "filesystem.read_text_file",
    ),
    (
        "get the contents of config.yaml",
        "filesystem.read_text_file",
    ),
    ("tail a log file", "filesystem.read_text_file"),
    (
        "read several files at once",
        "filesystem.read_multiple_files",
    ),
    ("load many files together", "filesystem.read_multiple_files"),
    ("display an image file", "filesystem.read_media_file"),
    ("read a picture or audio file", "filesystem.read_media_file"),
    ("save text to a new file", "filesystem.write_file"),
    ("overwrite a file", "filesystem.write_file"),
    ("create a file", "filesystem.write_file"),
    ("change a few lines in a file", "filesystem.edit_file"),
    ("replace some text inside a file", "filesystem.edit_file"),
    ("make a new folder", "filesystem.create_directory"),
    ("mkdir", "filesystem.create_directory"),
    (
        "list folders recursively as a tree",
        "filesystem.directory_tree",
    ),
    (
        "show the whole folder structure",
        "filesystem.directory_tree",
    ),
    ("rename a file", "filesystem.move_file"),
    ("move a document to another folder", "filesystem.move_file"),
    ("find files matching *.rs", "filesystem.search_files"),
    (
        "look for files named like report",
        "filesystem.search_files",
    ),
    ("how big is this file", "filesystem.get_file_info"),
    ("when was a file last modified", "filesystem.get_file_info"),
    ("file permissions and metadata", "filesystem.get_file_info"),
    (
        "which directories am I allowed to access",
        "filesystem.list_allowed_directories",
    ),
    (
        "list a directory with file sizes",
        "filesystem.list_directory_with_sizes",
    ),
    (
        "sort folder entries by size",
        "filesystem.list_directory_with_sizes",
    ),
    // memory: a knowledge graph.
    ("remember a new person", "memory.create_entities"),
    (
        "add entities to the knowledge graph",
        "memory.create_entities",
    ),
    (
        "record a new fact about an existing entity",
        "memory.add_observations",
    ),
    (
        "attach observations to an entity",
        "memory.add_observations",
    ),
    ("link two entities", "memory.create_relations"),
    ("connect two people in the graph", "memory.create_relations"),
    ("forget an entity", "memory.delete_entities"),
    ("remove a fact from an entity", "memory.delete_observations"),
    (
        "remove the relation between two entities",
        "memory.delete_relations",
    ),
    (
        "delete a connection between nodes",
        "memory.delete_relations",
    ),
    ("dump the whole knowledge graph", "memory.read_graph"),
    ("show everything in memory", "memory.read_graph"),
    ("search memory for a name", "memory.search_nodes"),
    ("find entities about cooking", "memory.search_nodes"),
    ("get particular entities by name", "memory.open_nodes"),
    // browser: Playwright.
    ("open a web page", "browser.browser_navigate"),
    ("go to https://example.com", "browser.browser_navigate"),
    ("visit a website", "browser.browser_navigate"),
    (
        "go back to the previous page",
        "browser.browser_navigate_back",
    ),
    ("return to the last page", "browser.browser_navigate_back"),
    ("click a button", "browser.browser_click"),
    ("double click on a link", "browser.browser_click"),
    ("type text into an input", "browser.browser_type"),
    ("enter my password in a field", "browser.browser_type"),
    ("fill in a login form", "browser.browser_fill_form"),
    ("press enter", "browser.browser_press_key"),
    ("hit the escape key", "browser.browser_press_key"),
    ("take a screenshot", "browser.browser_take_screenshot"),
    (
        "capture an image of the page",
        "browser.browser_take_screenshot",
    ),
    (
        "get the accessibility tree of the page",
        "browser.browser_snapshot",
    ),
    (
        "execute js in the page and return the result",
        "browser.browser_evaluate",
    ),
    ("fill out the checkout form", "browser.browser_fill_form"),
    ("close the browser", "browser.browser_close"),
    ("change the browser window size", "browser.browser_resize"),
    ("read the console logs", "browser.browser_console_messages"),
    ("accept an alert popup", "browser.browser_handle_dialog"),
    ("switch to dark mode", "browser.browser_emulate_media"),
    ("upload a file to the page", "browser.browser_file_upload"),
    ("drag an element onto another", "browser.browser_drag"),
    (
        "drop a file from outside onto the page",
        "browser.browser_drop",
    ),
    ("find some text on the page", "browser.browser_find"),
    ("list network requests", "browser.browser_network_requests"),
    (
        "what api calls did the page make",
        "browser.browser_network_requests",
    ),
    (
        "show the response body of one request",
        "browser.browser_network_request",
    ),
    ("hover over a menu", "browser.browser_hover"),
    (
        "choose an option from a dropdown",
        "browser.browser_select_option",
    ),
    ("open a new tab", "browser.browser_tabs"),
    ("switch between browser tabs", "browser.browser_tabs"),
    ("wait until some text appears", "browser.browser_wait_for"),
    ("sleep for two seconds", "browser.browser_wait_for"),
];
