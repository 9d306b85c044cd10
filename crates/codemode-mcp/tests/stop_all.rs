//! `stop_all_servers`, the host's exit path: every server and its children are gone within a
//! second, and none starts again afterwards.
//!
//! One test in its own binary: it stops every server this process started.

mod support;

use codemode::Connector;
use codemode_mcp::{server_process_groups, stop_all_servers, McpConnector};
use serde_json::json;
use std::time::{Duration, Instant};
use support::{alive, ctx, test_server};

async fn server_and_child() -> (McpConnector, u32, u32) {
    let c = McpConnector::connect(test_server(&["--spawn-child"]))
        .await
        .unwrap();
    let pid = c.pid().await.unwrap();
    let child = c
        .execute("child_pid", json!({}), ctx(0))
        .await
        .unwrap()
        .as_u64()
        .unwrap() as u32;
    (c, pid, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_and_its_children_are_gone_within_a_second() {
    let (a, a_pid, a_child) = server_and_child().await;
    let (b, b_pid, b_child) = server_and_child().await;
    let pids = [a_pid, a_child, b_pid, b_child];
    assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
    let groups = server_process_groups();
    assert!(
        groups.contains(&a_pid) && groups.contains(&b_pid),
        "{groups:?}"
    );

    let started = Instant::now();
    let stopped = tokio::task::spawn_blocking(|| stop_all_servers(Duration::from_millis(500)))
        .await
        .unwrap();
    assert_eq!(stopped, 2);
    for pid in pids {
        assert!(
            support::gone_within(
                pid,
                Duration::from_secs(1).saturating_sub(started.elapsed())
            )
            .await,
            "{pid} survived"
        );
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "{took:?}");
    eprintln!("stop_all_servers: every process gone after {took:?}");
    assert!(server_process_groups().is_empty());

    // The watchers see their servers die but start no new ones; neither does a call.
    let err = a.execute("plain", json!({}), ctx(1)).await.unwrap_err();
    assert!(err.0.contains("shutting down"), "{err}");
    let err = McpConnector::connect(test_server(&[]))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("codemode is shutting down"), "{err}");
    assert!(b.pid().await.is_none());
}
