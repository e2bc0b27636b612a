//! What the kernel holds for every command: its processes end with it, its output is bounded,
//! writes, network, signals and sockets are confined, credentials hidden, and writes are never
//! redirected or lost.

use super::*;

#[test]
fn every_process_ends_with_its_command() {
    let fx = Fixture::new();
    if !namespaces(&fx) {
        return;
    }
    let ws = fx.ws();
    // Sleeps no other test runs: this test finds its own processes by them.
    let s: Vec<String> = (0..4).map(|_| common::unique_seconds(1)).collect();
    let line = format!(
        "(sleep {}; touch bg1) & setsid sh -c 'sleep {}; touch bg2' & nohup sh -c 'sleep {}; touch bg3' >/dev/null 2>&1 & sh -c 'sleep {}; touch bg4' </dev/null >/dev/null 2>&1 & echo started",
        s[0], s[1], s[2], s[3]
    );
    let (_, text) = fx.run(&[&run_cmd(&line)], &["--mode", "auto"]);
    assert!(text.contains("<<<OUTPUT\nstarted\nOUTPUT>>>"), "{text}");
    // When the command ended, every process it started was gone (before any could write).
    for t in &s[..4] {
        assert!(
            common::processes_with(&format!("sleep {t}")).is_empty(),
            "sleep {t} outlived its command"
        );
    }
    for f in ["bg1", "bg2", "bg3", "bg4"] {
        assert!(
            !ws.join(f).exists(),
            "{f}: a background process outlived its command"
        );
    }
    // A kill -9 of the host ends them too.
    let (late1, late2, long) = (
        common::unique_seconds(2),
        common::unique_seconds(2),
        common::unique_seconds(30),
    );
    let files = fx.reply_files(&[&run_cmd(&format!(
        "setsid sh -c 'sleep {late1}; touch late1' & (sleep {late2}; touch late2) & sleep {long}"
    ))]);
    let mut child = fx
        .host()
        .args(["run", "--mode", "auto", "--workspace"])
        .arg(&ws)
        .args(&files)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    // The command is running: its processes are there.
    assert!(common::wait_until(Duration::from_secs(20), || {
        [&late1, &late2, &long]
            .iter()
            .all(|t| !common::processes_with(&format!("sleep {t}")).is_empty())
    }));
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        common::wait_until(Duration::from_secs(5), || {
            [&late1, &late2, &long]
                .iter()
                .all(|t| common::processes_with(&format!("sleep {t}")).is_empty())
        }),
        "a process outlived a kill -9 of the host"
    );
    for f in ["late1", "late2"] {
        assert!(
            !ws.join(f).exists(),
            "{f}: a process outlived a kill -9 of the host"
        );
    }
}

#[test]
fn the_timeout_holds_under_continuous_output() {
    let fx = Fixture::new();
    let r = reply(&[block("runcommand timeout=2", &[("CMD", "yes")])]);
    let start = Instant::now();
    let (_, text) = fx.run(&[&r], &["--mode", "auto"]);
    let took = start.elapsed();
    assert!(
        text.contains("code: KA_TIMEOUT"),
        "{}",
        &text[..text.len().min(2000)]
    );
    let line = text
        .lines()
        .find(|l| l.contains("KA_TIMEOUT | duration: "))
        .expect("duration");
    let secs: f64 = line
        .rsplit("duration: ")
        .next()
        .and_then(|d| d.trim_end_matches('s').parse().ok())
        .expect("seconds");
    eprintln!(
        "timeout=2 under `yes`: the command ended after {secs:.2}s; the whole run took {took:?}"
    );
    // A correctness bound, not a speed figure: before the fix this took up to 45 s.
    assert!(secs < 4.0, "the deadline did not hold: {secs}s");
}

/// A command stopped at its deadline has ended, with every process it started (one in a session
/// of its own that ignores SIGTERM and SIGHUP too), before keyless checks git's files and gives
/// the result: nothing of it writes afterwards.
#[test]
fn a_command_stopped_at_its_deadline_has_ended_before_its_result() {
    let fx = Fixture::new();
    let line =
        "setsid sh -c 'trap \"\" TERM HUP INT; while :; do date +%s%N > tick; done' & sleep 60";
    let r = reply(&[block("runcommand timeout=1", &[("CMD", line)])]);
    let (_, text) = fx.run(&[&r], &["--mode", "auto"]);
    assert!(text.contains("code: KA_TIMEOUT"), "{text}");
    let tick = fx.ws().join("tick");
    let first = std::fs::read(&tick).expect("the background process ran");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read(&tick).expect("tick"),
        first,
        "a process of the command still wrote after its result: {text}"
    );
}

#[test]
fn the_kernel_confines_writes_network_signals_and_sockets() {
    let fx = Fixture::new();
    let line = sandbox_line(&fx);
    if !line.contains("Landlock ABI") {
        assert!(
            line.contains("UNAVAILABLE") || line.contains("partly"),
            "{line}"
        );
        required_under_ci("Landlock", &line);
        return;
    }
    assert!(line.contains("seccomp"), "{line}");
    let outside = fx.root.join("outside");
    std::fs::create_dir_all(&outside).expect("dir");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("tcp");
    let tcp_port = tcp.local_addr().expect("addr").port();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let udp_port = udp.local_addr().expect("addr").port();
    let abstract_name = format!("keyless-test-{}", std::process::id());
    let unix = abstract_listener(&abstract_name);
    let me = std::process::id();
    let py = [
        "import socket, os".to_string(),
        "checks = [".to_string(),
        format!("    ('tcp', lambda: socket.create_connection(('127.0.0.1', {tcp_port}), timeout=2)),"),
        format!("    ('udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp_port}))),"),
        format!("    ('abstract', lambda: socket.socket(socket.AF_UNIX).connect('\\0{abstract_name}')),"),
        format!("    ('signal', lambda: os.kill({me}, 0)),"),
        "]".to_string(),
        "for what, f in checks:".to_string(),
        "    try:".to_string(),
        "        f(); print(what, 'ALLOWED')".to_string(),
        "    except Exception as e:".to_string(),
        "        print(what, 'refused', type(e).__name__)".to_string(),
    ]
    .join("\n");
    std::fs::write(fx.ws().join("probe.py"), py).expect("write");
    let cmd = format!(
        "echo in > inside.txt; echo out > {}/x.txt; echo t > /tmp/keyless-sandbox-probe-{me}; python3 probe.py",
        outside.display()
    );
    let (_, text) = fx.run(&[&run_cmd(&cmd)], &["--mode", "auto"]);
    assert_eq!(
        fx.read("inside.txt"),
        b"in\n",
        "the workspace is writable: {text}"
    );
    assert!(
        !outside.join("x.txt").exists(),
        "a write outside the workspace: {text}"
    );
    assert!(
        !Path::new(&format!("/tmp/keyless-sandbox-probe-{me}")).exists(),
        "a write to /tmp outside the private temp folder: {text}"
    );
    for what in ["tcp", "udp", "abstract", "signal"] {
        assert!(text.contains(&format!("{what} refused")), "{what}: {text}");
    }
    let mut buf = [0u8; 4];
    assert!(udp.recv(&mut buf).is_err(), "a UDP datagram got out");
    drop(unix);
    // Commands.Network, approved by the user, lets TCP through.
    std::fs::write(
        fx.ws().join("keyless.json"),
        r#"{"Commands": {"Network": true}}"#,
    )
    .expect("write");
    let (out, _) = host_in(
        &fx,
        &[
            "config",
            "--approve",
            "--workspace",
            fx.ws().to_str().expect("utf8"),
        ],
    );
    assert!(out.status.success());
    let (_, text) = fx.run(&[&run_cmd("python3 probe.py")], &["--mode", "auto"]);
    assert!(text.contains("tcp ALLOWED"), "{text}");
    assert!(text.contains("signal refused"), "{text}");
    assert!(text.contains("network allowed"), "{text}");
}

/// The user's credentials are hidden from every command, whatever it is and however it names
/// them: folders (`~/.ssh`, `~/.aws`) are empty, files (`~/.netrc`) read as empty, also through
/// a symlink the workspace holds, and a build in Auto mode sees no more than a read.
#[test]
fn credentials_in_the_home_are_hidden_from_every_command() {
    let fx = Fixture::new();
    if !namespaces(&fx) {
        return;
    }
    let home = fx.home();
    for (rel, text) in [
        (".ssh/id_ed25519", "CANARY-SSH-KEY"),
        (".aws/credentials", "CANARY-AWS"),
        (".netrc", "machine x password CANARY-NETRC"),
        (".config/gh/hosts.yml", "oauth_token: CANARY-GH"),
    ] {
        let p = home.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(&p, text).expect("write");
    }
    std::os::unix::fs::symlink(&home, fx.ws().join("h")).expect("link");
    // keyless's own tokens in its config folder: the MCP servers' and the pairing ones.
    std::fs::create_dir_all(fx.user_config()).expect("config");
    std::fs::write(
        fx.user_config().join("mcp-tokens.json"),
        r#"{"https://mcp.example/mcp": {"client_id": "c", "token_response": {"access_token": "CANARY-MCP"}}}"#,
    )
    .expect("tokens");
    let cmd = "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc ~/.config/gh/hosts.yml h/.ssh/id_ed25519 .?/home/.netrc 2>&1; ls -A ~/.ssh | wc -l; grep -r CANARY ~ 2>/dev/null; grep -r CANARY \"$XDG_CONFIG_HOME\" 2>/dev/null; echo listed";
    let (_, text) = fx.run(&[&run_cmd(cmd)], &["--mode", "auto"]);
    assert!(text.contains("listed"), "{text}");
    assert!(
        !text.contains("CANARY"),
        "a credential reached the results: {text}"
    );
    // The files are still there for the user.
    assert_eq!(
        std::fs::read_to_string(home.join(".ssh/id_ed25519")).expect("key"),
        "CANARY-SSH-KEY"
    );
}

/// A command run as root (in a container, say) keeps only the capabilities that let it use
/// files others own: no administration, modules, tracing, raw I/O or killing any process, and
/// the clock cannot be set (the test sets it to the time it already is, so a failure changes
/// nothing).
#[test]
fn a_command_run_as_root_keeps_no_power_over_the_machine() {
    let fx = Fixture::new();
    if !nix::unistd::getuid().is_root() {
        // Under CI (run as root) this fails rather than going green untested.
        required_under_ci(
            "root (a command has no capabilities to drop otherwise)",
            "not root",
        );
        return;
    }
    let line = sandbox_line(&fx);
    if !line.contains("seccomp") {
        required_under_ci("seccomp", &line);
        return;
    }
    let cmd = "grep -E '^Cap(Eff|Prm|Bnd|Amb):' /proc/self/status; date -s \"@$(date +%s)\" >/dev/null 2>&1; echo clock=$?";
    let (_, text) = fx.run(&[&run_cmd(cmd)], &["--mode", "auto"]);
    let mask = |name: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("{name} in {text}"));
        u64::from_str_radix(line[name.len() + 1..].trim(), 16).expect("hex")
    };
    // CAP_KILL 5, CAP_NET_ADMIN 12, CAP_SYS_MODULE 16, CAP_SYS_RAWIO 17, CAP_SYS_PTRACE 19,
    // CAP_SYS_ADMIN 21, CAP_SYS_BOOT 22, CAP_SYS_TIME 25, CAP_MKNOD 27, CAP_BPF 39.
    for set in ["CapEff", "CapPrm", "CapBnd", "CapAmb"] {
        let m = mask(set);
        for bit in [5, 12, 16, 17, 19, 21, 22, 25, 27, 39] {
            assert_eq!(m & (1 << bit), 0, "{set} keeps capability {bit}: {text}");
        }
    }
    // CAP_DAC_OVERRIDE (1) stays: root still uses files that other users own.
    assert_ne!(mask("CapEff") & (1 << 1), 0, "{text}");
    assert!(text.contains("clock=1"), "the clock could be set: {text}");
}

#[test]
fn a_symlink_swap_never_redirects_a_write() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let outside = fx.root.join("outside");
    std::fs::create_dir_all(&outside).expect("dir");
    let d = ws.join("d");
    std::fs::create_dir_all(&d).expect("dir");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Swaps made while a batch runs: the proof that writes and swaps raced.
    let during = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, d, outside) = (stop.clone(), d.clone(), outside.clone());
        let (during, running) = (during.clone(), running.clone());
        std::thread::spawn(move || {
            let real = d.with_file_name("d-real");
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // d is a folder, then a symlink to the outside folder, and so on.
                let _ = std::fs::rename(&d, &real);
                let _ = std::os::unix::fs::symlink(&outside, &d);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::rename(&real, &d);
                // A while as a real folder too, so that writes meet both.
                std::thread::sleep(Duration::from_micros(100));
                swaps += 1;
                if running.load(std::sync::atomic::Ordering::Relaxed) {
                    during.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            swaps
        })
    };
    let mut writes = 0;
    let (mut refused, mut written) = (0, 0);
    for round in 0..6 {
        let blocks: Vec<String> = (0..100)
            .map(|i| {
                block(
                    &format!("newfile d/r{round}-f{i}.txt"),
                    &[("CONTENT", "agent content")],
                )
            })
            .collect();
        running.store(true, std::sync::atomic::Ordering::Relaxed);
        let (_, text) = fx.run(
            &[&reply(&blocks)],
            &[
                "--pace",
                "batch",
                "--max-commands",
                "100",
                "--failure-mode",
                "continue",
            ],
        );
        running.store(false, std::sync::atomic::Ordering::Relaxed);
        refused += text.matches("code: KA_PATH_OUTSIDE").count();
        written += text.matches("status: ok").count();
        writes += 100;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    let during = during.load(std::sync::atomic::Ordering::Relaxed);
    // The race was real: swaps happened while batches ran, and writes met the symlink (refused
    // as leaving the workspace); how many met the folder instead is up to the scheduler.
    assert!(during >= 100, "only {during} swaps while the batches ran");
    assert!(
        refused > 0,
        "{written} written, {refused} refused: the writes never met a swap"
    );
    let leaked: Vec<_> = std::fs::read_dir(&outside)
        .expect("read")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    eprintln!(
        "{writes} writes against {swaps} folder/symlink swaps; files outside: {}",
        leaked.len()
    );
    assert!(
        leaked.is_empty(),
        "writes landed outside the workspace: {leaked:?}"
    );
}

#[test]
fn leftover_temp_files_are_removed_and_never_committed() {
    let fx = Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join(".agent/tmp")).expect("dir");
    std::fs::write(ws.join(".agent/tmp/.a.txt.keyless-1-1.tmp"), "partial").expect("write");
    std::fs::create_dir_all(ws.join("src")).expect("dir");
    std::fs::write(ws.join("src/.b.txt.keyless-2-2.tmp"), "partial").expect("write");
    std::fs::write(
        ws.join(".agent/tmp-journal"),
        "src/.b.txt.keyless-2-2.tmp\n",
    )
    .expect("write");
    // A temp file the journal does not list (a write interrupted on another filesystem by an
    // older host) is at least never committed.
    std::fs::write(ws.join(".c.txt.keyless-3-3.tmp"), "partial").expect("write");
    let (_, text) = fx.run(
        &[
            &reply(&[block("newfile e.txt", &[("CONTENT", "e")])]),
            &commit_reply("e"),
        ],
        &["--yes"],
    );
    assert!(!ws.join(".agent/tmp/.a.txt.keyless-1-1.tmp").exists());
    assert!(!ws.join("src/.b.txt.keyless-2-2.tmp").exists(), "{text}");
    assert_eq!(
        git(
            &fx.root.join("origin.git"),
            &["ls-tree", "-r", "--name-only", "feature"]
        ),
        "README.md\ne.txt\n",
        "{text}"
    );
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
}

#[test]
fn editfile_never_loses_what_another_writer_appends() {
    let fx = Fixture::new();
    let ws = fx.ws();
    let log = ws.join("log.txt");
    let mut initial = String::new();
    for i in 0..60 {
        initial.push_str(&format!("marker {i}\n"));
    }
    std::fs::write(&log, &initial).expect("write");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Appends made while the batch runs: the proof that edits and appends raced.
    let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let appender = {
        let (stop, log, running) = (stop.clone(), log.clone(), running.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let (mut n, mut during) = (0, 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&log) {
                    let _ = writeln!(f, "appended {n}");
                    n += 1;
                    if running.load(std::sync::atomic::Ordering::Relaxed) {
                        during += 1;
                    }
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            (n, during)
        })
    };
    let blocks: Vec<String> = (0..60)
        .map(|i| {
            block(
                "editfile log.txt",
                &[
                    ("FIND", &format!("marker {i}\n")),
                    ("REPLACE", &format!("edited {i}\n")),
                ],
            )
        })
        .collect();
    running.store(true, std::sync::atomic::Ordering::Relaxed);
    let (_, text) = fx.run(
        &[&reply(&blocks)],
        &[
            "--pace",
            "batch",
            "--max-commands",
            "60",
            "--failure-mode",
            "continue",
        ],
    );
    running.store(false, std::sync::atomic::Ordering::Relaxed);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (appended, during) = appender.join().expect("appender");
    assert!(during >= 20, "only {during} appends while the edits ran");
    let content = std::fs::read_to_string(&log).expect("read");
    let kept = content
        .lines()
        .filter(|l| l.starts_with("appended "))
        .count();
    let conflicts = text.matches("code: KA_FILE_CHANGED").count();
    eprintln!(
        "{appended} lines appended while 60 edits ran; {conflicts} edits reported KA_FILE_CHANGED"
    );
    assert_eq!(kept, appended, "lines another writer appended were lost");
    // Every edit either landed or said why not (how many land is up to the scheduler).
    let edited = content.lines().filter(|l| l.starts_with("edited ")).count();
    assert_eq!(edited + conflicts, 60, "{text}");
}

/// The edit's neighbours: a program holding the file open for writing (refused, nothing written,
/// and what it writes later stays), a reader holding it open (the edit lands), and a second name
/// outside the workspace (never written through).
#[test]
fn editfile_respects_writers_readers_and_other_names() {
    use std::io::Write;
    let fx = Fixture::new();
    let ws = fx.ws();
    let edit = |file: &str| {
        reply(&[block(
            &format!("editfile {file}"),
            &[("FIND", "old\n"), ("REPLACE", "new\n")],
        )])
    };
    // A writer that keeps its descriptor, as a running server keeps its log.
    std::fs::write(ws.join("held.log"), "old\n").expect("write");
    let mut writer = std::fs::OpenOptions::new()
        .append(true)
        .open(ws.join("held.log"))
        .expect("open");
    let (_, text) = fx.run(&[&edit("held.log")], &[]);
    assert!(text.contains("code: KA_FILE_CHANGED"), "{text}");
    assert!(text.contains("open for writing"), "{text}");
    writeln!(writer, "later").expect("append");
    drop(writer);
    assert_eq!(fx.read("held.log"), b"old\nlater\n");
    // A reader (a `tail -f`) does not stop the edit.
    std::fs::write(ws.join("read.txt"), "old\n").expect("write");
    let reader = std::fs::File::open(ws.join("read.txt")).expect("open");
    let (_, text) = fx.run(&[&edit("read.txt")], &[]);
    assert!(!text.contains("code: KA_"), "{text}");
    assert_eq!(fx.read("read.txt"), b"new\n");
    drop(reader);
    // A second name outside the workspace keeps its content.
    let canary = fx.root.join("canary.txt");
    std::fs::write(&canary, "old\n").expect("write");
    std::fs::hard_link(&canary, ws.join("linked.txt")).expect("link");
    let (_, text) = fx.run(&[&edit("linked.txt")], &[]);
    assert!(!text.contains("code: KA_"), "{text}");
    assert_eq!(fx.read("linked.txt"), b"new\n");
    assert_eq!(std::fs::read(&canary).expect("read"), b"old\n");
}

#[test]
fn a_program_shadowed_inside_the_workspace_is_not_trusted() {
    let fx = Fixture::new();
    let bin = fx.ws().join("node_modules/.bin");
    std::fs::create_dir_all(&bin).expect("dir");
    std::fs::write(bin.join("ls"), "#!/bin/sh\necho model code > ran.txt\n").expect("write");
    make_executable(&bin.join("ls"));
    let path = format!(
        "node_modules/.bin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    let files = fx.reply_files(&[&run_cmd("ls")]);
    let out = fx
        .host()
        .env("PATH", path)
        .args(["run", "--mode", "autosafe", "--workspace"])
        .arg(fx.ws())
        .args(&files)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("code: KA_COMMAND_DECLINED")
            && text.contains("from a folder the model can write"),
        "{text}"
    );
    assert!(!fx.ws().join("ran.txt").exists());
}
