//! Search quality over the GitHub REST description: 100 queries a person would type, each with
//! the operation it means written by hand. Prints top-1 and top-3 and asserts a floor.

#[path = "support/github.rs"]
mod support;

use codemode::discovery::Catalog;
use support::{github_connector, load_github_spec};

/// (query, the operation meant).
const CASES: &[(&str, &str)] = &[
    ("close an issue", "issues_update"),
    ("reopen a closed issue", "issues_update"),
    ("list open pull requests", "pulls_list"),
    ("create a branch", "git_create_ref"),
    ("fork a repository", "repos_create_fork"),
    ("open a new issue", "issues_create"),
    ("show all issues in a repo", "issues_list_for_repo"),
    ("comment on an issue", "issues_create_comment"),
    ("read the comments on an issue", "issues_list_comments"),
    ("put labels on an issue", "issues_add_labels"),
    ("remove a label from an issue", "issues_remove_label"),
    ("assign someone to an issue", "issues_add_assignees"),
    ("lock the conversation of an issue", "issues_lock"),
    ("fetch a single issue", "issues_get"),
    ("edit an issue comment", "issues_update_comment"),
    ("delete a comment on an issue", "issues_delete_comment"),
    ("events of an issue", "issues_list_events"),
    ("open a pull request", "pulls_create"),
    ("merge a PR", "pulls_merge"),
    ("get pull request details", "pulls_get"),
    ("files changed in a pull request", "pulls_list_files"),
    (
        "ask someone to review my pull request",
        "pulls_request_reviewers",
    ),
    ("reviews of a pull request", "pulls_list_reviews"),
    ("change the title of a pull request", "pulls_update"),
    ("commits in a pull request", "pulls_list_commits"),
    ("dismiss a review", "pulls_dismiss_review"),
    (
        "bring a pull request branch up to date",
        "pulls_update_branch",
    ),
    ("get repository info", "repos_get"),
    (
        "create a new repository",
        "repos_create_for_authenticated_user",
    ),
    (
        "create a repository in an organization",
        "repos_create_in_org",
    ),
    ("delete a repository", "repos_delete"),
    ("rename a repository", "repos_update"),
    ("list my repositories", "repos_list_for_authenticated_user"),
    ("repositories of an organization", "repos_list_for_org"),
    ("list a user's public repos", "repos_list_for_user"),
    ("list branches", "repos_list_branches"),
    ("get a branch", "repos_get_branch"),
    ("delete a branch", "git_delete_ref"),
    ("commit history of a repository", "repos_list_commits"),
    ("get a commit by sha", "repos_get_commit"),
    ("diff between two commits", "repos_compare_commits"),
    ("read a file from a repository", "repos_get_content"),
    (
        "update a file in a repo",
        "repos_create_or_update_file_contents",
    ),
    ("delete a file", "repos_delete_file"),
    ("list tags", "repos_list_tags"),
    ("publish a release", "repos_create_release"),
    ("list releases", "repos_list_releases"),
    ("latest release", "repos_get_latest_release"),
    ("upload a release asset", "repos_upload_release_asset"),
    (
        "invite a collaborator to a repository",
        "repos_add_collaborator",
    ),
    (
        "remove a collaborator from a repository",
        "repos_remove_collaborator",
    ),
    ("list collaborators", "repos_list_collaborators"),
    ("list contributors", "repos_list_contributors"),
    ("add a webhook to a repository", "repos_create_webhook"),
    ("list webhooks of a repository", "repos_list_webhooks"),
    ("remove a repository webhook", "repos_delete_webhook"),
    ("get the readme", "repos_get_readme"),
    ("protect a branch", "repos_update_branch_protection"),
    ("remove branch protection", "repos_delete_branch_protection"),
    ("set a commit status", "repos_create_commit_status"),
    (
        "combined status of a commit",
        "repos_get_combined_status_for_ref",
    ),
    ("list deployments", "repos_list_deployments"),
    ("create a deployment", "repos_create_deployment"),
    ("languages used in a repository", "repos_list_languages"),
    (
        "replace the topics of a repository",
        "repos_replace_all_topics",
    ),
    ("transfer a repository to another owner", "repos_transfer"),
    ("merge a branch", "repos_merge"),
    ("list forks", "repos_list_forks"),
    ("page views of a repository", "repos_get_views"),
    (
        "list workflow runs of a repository",
        "actions_list_workflow_runs_for_repo",
    ),
    ("trigger a workflow", "actions_create_workflow_dispatch"),
    ("cancel a workflow run", "actions_cancel_workflow_run"),
    (
        "download the logs of a workflow run",
        "actions_download_workflow_run_logs",
    ),
    (
        "list workflows of a repository",
        "actions_list_repo_workflows",
    ),
    (
        "add an actions secret to a repository",
        "actions_create_or_update_repo_secret",
    ),
    ("list repository secrets", "actions_list_repo_secrets"),
    ("delete a repository secret", "actions_delete_repo_secret"),
    (
        "jobs of a workflow run",
        "actions_list_jobs_for_workflow_run",
    ),
    (
        "list artifacts of a repository",
        "actions_list_artifacts_for_repo",
    ),
    ("download an artifact", "actions_download_artifact"),
    ("get a workflow run", "actions_get_workflow_run"),
    ("who am I", "users_get_authenticated"),
    ("look up a user by username", "users_get_by_username"),
    ("follow a user", "users_follow"),
    ("unfollow a user", "users_unfollow"),
    (
        "add an ssh key to my account",
        "users_create_public_ssh_key_for_authenticated_user",
    ),
    ("update my profile", "users_update_authenticated"),
    ("search repositories", "search_repos"),
    ("search code", "search_code"),
    (
        "search issues and pull requests",
        "search_issues_and_pull_requests",
    ),
    ("members of an organization", "orgs_list_members"),
    ("remove a member from an organization", "orgs_remove_member"),
    ("create a team", "teams_create"),
    (
        "star a repository",
        "activity_star_repo_for_authenticated_user",
    ),
    (
        "unstar a repo",
        "activity_unstar_repo_for_authenticated_user",
    ),
    (
        "mark notifications as read",
        "activity_mark_notifications_as_read",
    ),
    (
        "who starred a repository",
        "activity_list_stargazers_for_repo",
    ),
    ("create a gist", "gists_create"),
    ("create a label", "issues_create_label"),
    ("check my rate limit", "rate_limit_get"),
];

/// Top-1 share the test requires (it prints what it reached).
const TOP1_FLOOR: f64 = 0.88;
/// Top-3 share the test requires.
const TOP3_FLOOR: f64 = 0.95;

#[test]
fn hundred_queries_find_what_was_meant() {
    let Some(spec) = load_github_spec() else {
        return;
    };
    assert_eq!(CASES.len(), 100);
    let catalog = Catalog::new(vec![github_connector(&spec)]).expect("the GitHub catalogue builds");
    let (mut top1, mut top3) = (0usize, 0usize);
    let mut misses = Vec::new();
    for (query, meant) in CASES {
        let path = format!("github.{meant}");
        assert!(
            catalog.tool("github", meant).is_some(),
            "{meant} is not an operation"
        );
        let out = catalog.search(query, &[]);
        let rank = out.results.iter().position(|r| r.path == path);
        match rank {
            Some(0) => {
                top1 += 1;
                top3 += 1;
            }
            Some(r) if r < 3 => top3 += 1,
            _ => {}
        }
        if rank != Some(0) {
            let got: Vec<&str> = out
                .results
                .iter()
                .take(3)
                .map(|r| r.path.as_str())
                .collect();
            misses.push(format!("{query:?} -> {meant} at {rank:?}; top: {got:?}"));
        }
    }
    let n = CASES.len() as f64;
    eprintln!(
        "search quality over {} GitHub queries: top-1 {:.0}%, top-3 {:.0}%",
        CASES.len(),
        100.0 * top1 as f64 / n,
        100.0 * top3 as f64 / n
    );
    for miss in &misses {
        eprintln!("  {miss}");
    }
    assert!(
        top1 as f64 / n >= TOP1_FLOOR,
        "top-1 {top1}/100 is below the floor"
    );
    assert!(
        top3 as f64 / n >= TOP3_FLOOR,
        "top-3 {top3}/100 is below the floor"
    );
}
