//! Undo covers what commands changed, and never overwrites a change made after the batch unasked:
//! a `sed -i`, an `rm`, a file a command made, bytes kept exactly (CRLF, the run
//! bit), a later batch and the user's own edit, `undo --list` naming every file, and the user's
//! repository left as it was.
#![allow(clippy::disallowed_methods)] // tests start the programs under test
#![allow(clippy::expect_used)] // fixture helpers fail the test loudly

mod common;

use common::{commit_all, git, host_in, run_cmd, session_of, Fixture};
use std::os::unix::fs::PermissionsExt as _;

/// `run` of one command line in Auto mode (no one is asked); the batch's label.
fn command(fx: &Fixture, line: &str) -> String {
    let (out, text) = fx.run(&[&run_cmd(line)], &["--mode", "auto"]);
    assert!(
        text.contains("status: ok"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!("{}/1-1", session_of(&text))
}

fn undo(fx: &Fixture, extra: &[&str]) -> (bool, String) {
    let ws = fx.ws();
    let mut args = vec!["undo", "--workspace", ws.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    let (out, text) = host_in(fx, &args);
    (
        out.status.success(),
        format!("{text}{}", String::from_utf8_lossy(&out.stderr)),
    )
}

fn objects(fx: &Fixture) -> String {
    git(&fx.ws(), &["count-objects", "-v"])
}

#[test]
fn undo_restores_what_a_command_changed_and_never_a_later_change_unasked() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::write(ws.join("conf.ini"), "a=1\r\nb=2\r\n").expect("write");
    std::fs::write(ws.join("tool.sh"), "#!/bin/sh\necho one\n").expect("write");
    std::fs::set_permissions(ws.join("tool.sh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::fs::write(ws.join("gone.txt"), "keep me\n").expect("write");
    commit_all(&ws, "files");
    // A file git does not track is kept too.
    std::fs::write(ws.join("notes.txt"), "draft\n").expect("write");
    let before = objects(&fx);

    let first = command(
        &fx,
        "sed -i 's/a=1/a=9/' conf.ini && sed -i 's/one/two/' tool.sh && rm gone.txt && echo made > made.txt && echo more >> notes.txt",
    );
    assert_eq!(fx.read("conf.ini"), b"a=9\r\nb=2\r\n");
    assert!(!ws.join("gone.txt").exists());
    // The user's repository gets no object from keyless's snapshots.
    assert_eq!(objects(&fx), before);

    // `undo --list` names the command's files.
    let (ok, list) = undo(&fx, &["--list"]);
    assert!(ok, "{list}");
    for f in ["conf.ini", "tool.sh", "gone.txt", "made.txt", "notes.txt"] {
        assert!(list.contains(f), "{f} missing from:\n{list}");
    }

    // A later batch changes one of its files: undoing the first is refused, naming the file, and
    // nothing changes.
    let second = command(&fx, "sed -i 's/b=2/b=3/' conf.ini");
    let (ok, text) = undo(&fx, &["--batch", &first]);
    assert!(!ok, "{text}");
    assert!(text.contains("KA_UNDO_REFUSED"), "{text}");
    assert!(
        text.contains("conf.ini changed after batch") && text.contains("--force"),
        "{text}"
    );
    assert_eq!(fx.read("conf.ini"), b"a=9\r\nb=3\r\n");
    assert!(ws.join("made.txt").exists());

    // Undo the later batch, then the first: every byte as it was, the run bit too.
    let (ok, text) = undo(&fx, &["--batch", &second]);
    assert!(ok, "{text}");
    assert_eq!(fx.read("conf.ini"), b"a=9\r\nb=2\r\n");
    let (ok, text) = undo(&fx, &["--batch", &first]);
    assert!(ok, "{text}");
    assert_eq!(fx.read("conf.ini"), b"a=1\r\nb=2\r\n");
    assert_eq!(fx.read("tool.sh"), b"#!/bin/sh\necho one\n");
    let mode = std::fs::metadata(ws.join("tool.sh"))
        .expect("tool.sh")
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "{mode:o}");
    assert_eq!(fx.read("gone.txt"), b"keep me\n");
    assert_eq!(fx.read("notes.txt"), b"draft\n");
    assert!(!ws.join("made.txt").exists());
    assert!(
        text.contains("removed (the batch made it) made.txt"),
        "{text}"
    );
    assert!(text.contains("restored gone.txt"), "{text}");
    assert_eq!(git(&ws, &["status", "--porcelain"]), "?? notes.txt\n");
    assert_eq!(objects(&fx), before);

    // The user edits a file after a batch: undo names it and asks for --force.
    let third = command(&fx, "echo line >> notes.txt");
    std::fs::write(ws.join("notes.txt"), "draft\nline\nmine\n").expect("edit");
    let (ok, text) = undo(&fx, &[]);
    assert!(!ok, "{text}");
    assert!(text.contains("notes.txt changed after batch"), "{text}");
    assert_eq!(fx.read("notes.txt"), b"draft\nline\nmine\n");
    let (ok, text) = undo(&fx, &["--batch", &third, "--force"]);
    assert!(ok, "{text}");
    assert_eq!(fx.read("notes.txt"), b"draft\n");
}

#[test]
fn a_command_in_a_folder_that_is_not_a_repository_is_undoable_too() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::remove_dir_all(ws.join(".git")).expect("no git");
    std::fs::write(ws.join("data.txt"), "one\n").expect("write");
    let label = command(&fx, "sed -i 's/one/two/' data.txt");
    assert_eq!(fx.read("data.txt"), b"two\n");
    let (ok, text) = undo(&fx, &["--batch", &label]);
    assert!(ok, "{text}");
    assert_eq!(fx.read("data.txt"), b"one\n");
}

/// Every command of a run after its first is kept for undo from what the kernel saw it change
/// (the change journal): in-place appends, new folders made in one go, a folder moved, a file
/// removed, a write through a second hard link (the journal sees only the name
/// written), and
/// a command that makes more changes than the kernel's event queue holds (16,384 events by
/// default), in a folder already watched, with the change that counts made last. Undoing the batch puts
/// every byte back.
#[test]
fn what_the_later_commands_of_a_run_changed_is_undone_too() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::write(ws.join("a.txt"), "a\n").expect("write");
    std::fs::write(ws.join("b.txt"), "b\n").expect("write");
    std::fs::write(ws.join("keep.txt"), "keep\n").expect("write");
    std::fs::write(ws.join("late.txt"), "late\n").expect("write");
    std::fs::create_dir_all(ws.join("dir1/sub")).expect("dir");
    std::fs::write(ws.join("dir1/sub/d.txt"), "d\n").expect("write");
    // More files changed by one command than the backup flushes one by one.
    std::fs::create_dir_all(ws.join("t")).expect("dir");
    for i in 0..40 {
        std::fs::write(ws.join(format!("t/{i}.txt")), format!("{i}\n")).expect("write");
    }
    commit_all(&ws, "files");
    let cmds = [
        "mkdir many",
        "for f in t/*.txt; do echo changed >> $f; done",
        "echo more >> a.txt && mkdir -p new/deep/er && echo n > new/deep/er/f.txt && rm b.txt && mv dir1 dir2 && echo moved >> dir2/sub/d.txt",
        "mkdir links && ln keep.txt links/h",
        "echo through-the-link >> links/h",
        "i=0; while [ $i -lt 12000 ]; do : > many/$i; i=$((i+1)); done; echo flood >> late.txt",
    ];
    let blocks: Vec<String> = cmds
        .iter()
        .map(|c| common::block("runcommand", &[("CMD", c)]))
        .collect();
    let (out, text) = fx.run(
        &[&common::reply(&blocks)],
        &["--mode", "auto", "--pace", "batch", "--max-commands", "10"],
    );
    assert!(
        text.matches("status: ok").count() >= cmds.len(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fx.read("keep.txt"), b"keep\nthrough-the-link\n");
    assert_eq!(fx.read("late.txt"), b"late\nflood\n");
    let label = format!("{}/1-1", session_of(&text));
    let (ok, list) = undo(&fx, &["--list"]);
    assert!(ok, "{list}");
    // The twelve thousand files made, the forty changed, and the others: one record each.
    assert!(list.contains("12048"), "{list}");
    let (ok, text) = undo(&fx, &["--batch", &label]);
    assert!(ok, "{text}");
    assert_eq!(fx.read("a.txt"), b"a\n");
    assert_eq!(fx.read("b.txt"), b"b\n");
    assert_eq!(fx.read("keep.txt"), b"keep\n");
    assert_eq!(fx.read("late.txt"), b"late\n");
    assert_eq!(fx.read("dir1/sub/d.txt"), b"d\n");
    assert!(!ws.join("dir2/sub/d.txt").exists());
    assert!(!ws.join("new/deep/er/f.txt").exists());
    for i in 0..40 {
        assert_eq!(fx.read(&format!("t/{i}.txt")), format!("{i}\n").as_bytes());
    }
}

/// A new process's first snapshot starts from the index the last one left, and sees what the
/// user did in between: a tracked file turned into a link and another into a folder, a file
/// removed and one made, a repository nested in the workspace. A command then changes them all:
/// undo puts back what the command changed (the user's versions), and leaves the link and the
/// nested repository alone.
#[test]
fn the_first_look_of_a_new_process_starts_from_what_the_user_left() {
    let fx = Fixture::new();
    let ws = fx.ws();
    for f in ["linked.txt", "folder.txt", "gone.txt", "plain.txt"] {
        std::fs::write(ws.join(f), format!("{f} committed\n")).expect("write");
    }
    commit_all(&ws, "files");
    // The first run leaves its index behind.
    command(&fx, "true");
    // The user, between two runs.
    std::fs::remove_file(ws.join("linked.txt")).expect("rm");
    std::os::unix::fs::symlink("plain.txt", ws.join("linked.txt")).expect("link");
    std::fs::remove_file(ws.join("folder.txt")).expect("rm");
    std::fs::create_dir(ws.join("folder.txt")).expect("dir");
    std::fs::write(ws.join("folder.txt/inner.txt"), "inner mine\n").expect("write");
    std::fs::remove_file(ws.join("gone.txt")).expect("rm");
    std::fs::write(ws.join("plain.txt"), "plain mine\n").expect("write");
    std::fs::write(ws.join("new.txt"), "new mine\n").expect("write");
    std::fs::create_dir_all(ws.join("nested")).expect("dir");
    git(&ws.join("nested"), &["init", "-q"]);
    std::fs::write(ws.join("nested/n.txt"), "nested mine\n").expect("write");

    let label = command(
        &fx,
        "echo cmd >> plain.txt && echo cmd >> new.txt && echo cmd >> folder.txt/inner.txt && echo cmd > gone.txt && echo cmd >> nested/n.txt",
    );
    let (ok, list) = undo(&fx, &["--list"]);
    assert!(ok, "{list}");
    for f in ["plain.txt", "new.txt", "folder.txt/inner.txt", "gone.txt"] {
        assert!(list.contains(f), "{f} missing from:\n{list}");
    }
    let (ok, text) = undo(&fx, &["--batch", &label]);
    assert!(ok, "{text}");
    assert_eq!(fx.read("plain.txt"), b"plain mine\n");
    assert_eq!(fx.read("new.txt"), b"new mine\n");
    assert_eq!(fx.read("folder.txt/inner.txt"), b"inner mine\n");
    assert!(!ws.join("gone.txt").exists(), "{text}");
    assert!(std::fs::symlink_metadata(ws.join("linked.txt"))
        .expect("link")
        .file_type()
        .is_symlink());
    // A repository nested in the workspace is not kept for undo (docs/executor.md).
    assert_eq!(fx.read("nested/n.txt"), b"nested mine\ncmd\n");
}
