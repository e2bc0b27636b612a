//! What a command the user approved can plant: git's control files, repositories anywhere,
//! worktrees and links, toolchains, environment reads, MCP programs, submodules, keyless.json.

use super::*;

#[test]
fn an_approved_command_cannot_replace_git_or_plant_its_control_files() {
    let fx = common::Fixture::new();
    let c1 = fx.root.join("canary-hook");
    let c2 = fx.root.join("canary-fsmonitor");
    let c3 = fx.root.join("canary-commondir");
    let c4 = fx.root.join("canary-worktree-config");
    // The issue's attack, then the next variants: a commondir that sends git to a repository the
    // command made, and a config.worktree.
    let line = format!(
        "mv .git .git-old; cp -a .git-old .git; \
         printf '#!/bin/sh\\necho ran > {c1}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         git config core.fsmonitor \"{f2}\"; \
         git init -q --bare evil; git -C evil config core.fsmonitor \"{f3}\"; \
         printf '%s\\n' \"$PWD/evil\" > .git/commondir; \
         git config -f .git/config.worktree core.fsmonitor \"{f4}\"; \
         echo done",
        c1 = c1.display(),
        f2 = fsmonitor(&c2),
        f3 = fsmonitor(&c3),
        f4 = fsmonitor(&c4),
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "ask", "--yes"]);
    assert!(text.contains("[approved by --yes]"), "{text}");
    users_git(&fx.ws());
    canary_gone(&[c1.clone(), c2.clone(), c3.clone(), c4.clone()], &text);
    // The repository is the user's, untouched, and still works.
    assert!(fx.ws().join(".git/HEAD").is_file());
    assert!(!fx.ws().join(".git/commondir").exists(), "{text}");
    assert!(!fx.ws().join(".git/config.worktree").exists(), "{text}");
    assert!(!fx.ws().join(".git/hooks/pre-commit").exists(), "{text}");
    assert!(
        !std::fs::read_to_string(fx.ws().join(".git/config"))
            .expect("config")
            .contains("fsmonitor"),
        "{text}"
    );
    // What was put back is said, and nothing was deleted: it is in the quarantine.
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(text.contains(".git/commondir"), "{text}");
    assert!(text.contains("evil/config"), "{text}");
    assert!(text.contains(".git/config.worktree"), "{text}");
    assert!(fx.ws().join(".agent/quarantine").is_dir());
    // Positive control, one variant at a time (a commondir hides the repository's own config,
    // so together they would mask each other): each writes its canary without keyless.
    let variants = [
        (
            format!(
                "mv .git .git-old; cp -a .git-old .git; printf '#!/bin/sh\\necho ran > {}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
                c1.display()
            ),
            c1,
        ),
        (format!("git config core.fsmonitor \"{}\"", fsmonitor(&c2)), c2),
        (
            format!(
                "git init -q --bare evil; git -C evil config core.fsmonitor \"{}\"; printf '%s\\n' \"$PWD/evil\" > .git/commondir",
                fsmonitor(&c3)
            ),
            c3,
        ),
        (
            format!(
                "git config extensions.worktreeConfig true; git config -f .git/config.worktree core.fsmonitor \"{}\"",
                fsmonitor(&c4)
            ),
            c4,
        ),
    ];
    for (variant, canary) in variants {
        let control = common::Fixture::new();
        runs_without_keyless(&control.ws(), &variant, &[canary], || {
            users_git(&control.ws());
        });
    }
}

#[test]
fn repositories_a_command_makes_anywhere_keep_no_program_of_its_choosing() {
    let fx = common::Fixture::new();
    let c = |n: &str| fx.root.join(format!("canary-{n}"));
    let canaries = [c("nested"), c("bare"), c("alias"), c("link"), c("hook")];
    // Unapproved (Auto mode runs them unasked): a nested repository, a bare one, an alias, a
    // `.git` file sending git to a repository in the sandbox's temp folder, a nested hook.
    let line = format!(
        "git init -q sub && git -C sub config core.fsmonitor \"{nested}\"; \
         git clone -q --bare . deep/er/bare.git && git -C deep/er/bare.git config core.pager \"{bare}\"; \
         git -C sub config alias.st \"!echo ran > {alias}\"; \
         git init -q --bare .agent/sandbox-tmp/g && git --git-dir=.agent/sandbox-tmp/g config core.bare false && git --git-dir=.agent/sandbox-tmp/g config core.fsmonitor \"{link}\"; \
         mkdir -p linked && echo 'gitdir: ../.agent/sandbox-tmp/g' > linked/.git; \
         printf '#!/bin/sh\\necho ran > {hook}\\n' > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit; \
         echo done",
        nested = fsmonitor(&canaries[0]),
        bare = fsmonitor(&canaries[1]),
        alias = canaries[2].display(),
        link = fsmonitor(&canaries[3]),
        hook = canaries[4].display(),
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "auto"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    for dir in ["sub", "linked"] {
        users_git(&fx.ws().join(dir));
    }
    user_logs_at_a_terminal(&fx.ws().join("deep/er/bare.git"));
    let _ = Command::new("git")
        .arg("st")
        .current_dir(fx.ws().join("sub"))
        .output();
    canary_gone(&canaries, &text);
    // Positive control: the same line and the same git, without keyless, write every canary.
    let control = common::Fixture::new();
    let cws = control.ws();
    std::fs::create_dir_all(cws.join(".agent/sandbox-tmp")).expect("tmp");
    runs_without_keyless(&cws, &line, &canaries, || {
        for dir in ["sub", "linked"] {
            users_git(&cws.join(dir));
        }
        user_logs_at_a_terminal(&cws.join("deep/er/bare.git"));
        let _ = Command::new("git")
            .arg("st")
            .current_dir(cws.join("sub"))
            .output();
    });
    // A repository the command made with harmless settings is kept as it is.
    let (_, text) = fx.run(
        &[&common::run_cmd(
            "git init -q plain && git -C plain config user.name Model && git -C plain config remote.origin.url https://example.com/x.git && echo made",
        )],
        &["--mode", "auto"],
    );
    assert!(text.contains("status: ok"), "{text}");
    assert!(!text.contains("KA_GIT_PROTECTED"), "{text}");
    assert!(std::fs::read_to_string(fx.ws().join("plain/.git/config"))
        .expect("config")
        .contains("Model"));
}

#[test]
fn an_approved_worktree_is_kept_and_its_links_are_checked() {
    let fx = common::Fixture::new();
    let canary = fx.root.join("canary-wt");
    let (_, text) = fx.run(
        &[&common::run_cmd("git worktree add -q wt && echo added")],
        &["--mode", "ask", "--yes"],
    );
    assert!(text.contains("status: ok"), "{text}");
    assert!(!text.contains("KA_GIT_PROTECTED"), "{text}");
    assert!(fx.ws().join("wt/.git").is_file());
    // The worktree's commondir pointed at a repository the command made: put back.
    let line = format!(
        "git init -q --bare evil && git -C evil config core.fsmonitor \"{}\"; printf '../../../evil\\n' > .git/worktrees/wt/commondir; echo done",
        fsmonitor(&canary)
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "ask", "--yes"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    users_git(&fx.ws().join("wt"));
    canary_gone(std::slice::from_ref(&canary), &text);
    assert_eq!(
        std::fs::read_to_string(fx.ws().join(".git/worktrees/wt/commondir")).expect("commondir"),
        "../..\n"
    );
    // Positive control: in a worktree made the same way, the line without keyless runs it.
    let control = common::Fixture::new();
    common::git(&control.ws(), &["worktree", "add", "-q", "wt"]);
    runs_without_keyless(&control.ws(), &line, &[canary], || {
        users_git(&control.ws().join("wt"));
    });
}

#[test]
fn a_git_file_link_cannot_be_redirected() {
    // The workspace's .git is a file (a separate git folder, as worktrees and submodules have).
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    common::git(root, &["init", "-q", "--separate-git-dir", "gitdir", "ws"]);
    let ws = root.join("ws");
    std::fs::write(ws.join("a.txt"), "a\n").expect("write");
    common::commit_all(&ws, "a");
    let canary = root.join("canary-gitdir");
    let line = format!(
        "git init -q --bare evil && git -C evil config core.bare false && git -C evil config core.fsmonitor \"{}\"; echo 'gitdir: evil' > .git; echo done",
        fsmonitor(&canary)
    );
    let reply = root.join("reply.txt");
    std::fs::write(&reply, common::run_cmd(&line)).expect("reply");
    for mode in [&["--mode", "auto"][..], &["--mode", "ask", "--yes"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
            .env("XDG_CONFIG_HOME", root.join("config"))
            .args(["run", "--workspace"])
            .arg(&ws)
            .args(mode)
            .arg(&reply)
            .output()
            .expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        users_git(&ws);
        canary_gone(std::slice::from_ref(&canary), &text);
        assert!(
            std::fs::read_to_string(ws.join(".git"))
                .expect(".git")
                .contains("gitdir"),
            "{text}"
        );
        assert!(!std::fs::read_to_string(ws.join(".git"))
            .expect(".git")
            .contains("evil"));
    }
    // Positive control: the same line on the same kind of workspace, without keyless.
    common::git(
        root,
        &["init", "-q", "--separate-git-dir", "gitdir2", "control"],
    );
    let control = root.join("control");
    runs_without_keyless(&control, &line, &[canary], || users_git(&control));
}

#[test]
fn dev_shm_is_private_to_the_command() {
    let fx = common::Fixture::new();
    let name = format!("keyless-shm-{}", std::process::id());
    let shared = Path::new("/dev/shm").join(&name);
    let _ = std::fs::remove_file(&shared);
    let (_, text) = fx.run(
        &[&common::run_cmd(&format!(
            "echo planted > /dev/shm/{name} && cat /dev/shm/{name}"
        ))],
        &["--mode", "auto"],
    );
    // Writable inside (programs that need shared memory still work)…
    assert!(text.contains("<<<OUTPUT\nplanted\nOUTPUT>>>"), "{text}");
    // …but never the /dev/shm the user's other programs share.
    assert!(!shared.exists(), "{text}");
}

#[test]
fn a_planted_toolchain_never_runs_unasked() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    // The attack: a toolchain file naming a toolchain the model wrote. rustup's proxy (`cargo`)
    // runs it for `cargo --version`, which was ReadOnly and ran unasked in AutoSafe.
    std::fs::create_dir_all(ws.join("tc/bin")).expect("dir");
    std::fs::write(
        ws.join("tc/bin/cargo"),
        "#!/bin/sh\necho PLANTED-TOOLCHAIN-RAN\n",
    )
    .expect("cargo");
    common::make_executable(&ws.join("tc/bin/cargo"));
    std::fs::write(
        ws.join("rust-toolchain.toml"),
        format!("[toolchain]\npath = \"{}/tc\"\n", ws.display()),
    )
    .expect("toolchain");
    for line in [
        "cargo --version",
        "cargo metadata --format-version 1",
        "cargo tree",
    ] {
        let (_, text) = fx.run(&[&common::run_cmd(line)], &["--mode", "autosafe"]);
        assert!(!text.contains("PLANTED-TOOLCHAIN-RAN"), "{line}: {text}");
        assert!(text.contains("code: KA_COMMAND_DECLINED"), "{line}: {text}");
        assert!(text.contains("rust-toolchain.toml"), "{line}: {text}");
    }
    // What the user is shown agrees with what ran.
    let (_, shown) = common::host_in(
        &fx,
        &[
            "policy",
            "--mode",
            "autosafe",
            "--workspace",
            ws.to_str().expect("utf8"),
            "--",
            "cargo",
            "--version",
        ],
    );
    assert!(
        shown.starts_with("tier: Execute  decision: confirm"),
        "{shown}"
    );
    // Every steering file of the table, in the root or a subfolder, for its program.
    for (file, line) in [
        (".mvn/jvm.config", "mvn --version"),
        ("sub/.cargo/config.toml", "cargo build"),
        (".npmrc", "npm --version"),
        (".yarnrc.yml", "yarn --version"),
        ("go.work", "go version"),
        (".python-version", "python3 --version"),
        ("gradle.properties", "gradle --version"),
    ] {
        let tmp = tempfile::tempdir().expect("tmp");
        let p = tmp.path().join(file);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(&p, "x\n").expect("file");
        let (_, shown) = common::host_in(
            &fx,
            &[
                "policy",
                "--mode",
                "autosafe",
                "--workspace",
                tmp.path().to_str().expect("utf8"),
                "--",
                line,
            ],
        );
        assert!(
            shown.starts_with("tier: Execute") && shown.contains(file),
            "{file}: {shown}"
        );
    }
}

#[test]
fn env_process_reads_only_allowed_names_and_never_a_credential() {
    let tmp = tempfile::tempdir().expect("tmp");
    let d = tmp.path();
    let cfg_tmp = tempfile::tempdir().expect("cfg");
    let secrets: &[(&str, &str)] = &[
        (
            "DATABASE_URL",
            "postgres://app:s3cr3t-canary@db.example.com/app",
        ),
        (
            "AZURE_STORAGE_CONNECTION_STRING",
            "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=c4nary==",
        ),
        ("GPG_PASSPHRASE", "canary horse battery"),
        ("GITHUB_TOKEN2", "ghp_canary0123456789abcdefghijklmnop"),
        ("OPENAI_APIKEYS", "sk-canary-0123456789abcdefghij"),
        ("MYSQL_PWD", "canary"),
        (
            "SENTRY_DSN",
            "https://c4nary0123456789abcdef@o1.ingest.sentry.io/1",
        ),
        (
            "SLACK_WEBHOOK_URL",
            "https://hooks.slack.com/services/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",
        ),
        ("HTTPS_PROXY", "http://user:canary@proxy.example.com:3128"),
        ("CI_JOB_JWT", "eyJhbGciOiJSUzI1NiJ9.canary.sig"),
        ("APP_SETTING", "https://u:canary@h.example.com"),
    ];
    let cfg = cfg_tmp.path().join("cfg");
    for allow in [
        None,
        // A prefix or * lets names through, never a secret-looking name or a credential value.
        Some(r#"["*"]"#),
        Some(r#"["APP_*", "GPG_*"]"#),
    ] {
        std::fs::create_dir_all(cfg.join("keyless")).expect("cfg");
        match allow {
            Some(list) => std::fs::write(
                cfg.join("keyless/keyless.json"),
                format!("{{\"Programs\": {{\"Env\": {list}}}}}"),
            )
            .expect("config"),
            None => {
                let _ = std::fs::remove_file(cfg.join("keyless/keyless.json"));
            }
        }
        for (name, value) in secrets {
            std::fs::write(
                d.join("e.as"),
                format!("import tool Env from \"env://process\"\n\nmain agent A {{\n    main func(input) {{\n        return Env.get({{ name: \"{name}\" }})\n    }}\n}}\n"),
            )
            .expect("program");
            let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
                .args(["as", "run", "e.as"])
                .current_dir(d)
                .env("XDG_CONFIG_HOME", &cfg)
                .env(name, value)
                .output()
                .expect("run");
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!all.contains("anary"), "{allow:?} {name}: {all}");
            assert!(
                all.contains("KA_AS_TOOL_REFUSED"),
                "{allow:?} {name}: {all}"
            );
        }
    }
    // Named exactly, the user means it.
    std::fs::write(
        cfg.join("keyless/keyless.json"),
        r#"{"Programs": {"Env": ["DATABASE_URL"]}}"#,
    )
    .expect("config");
    std::fs::write(
        d.join("e.as"),
        "import tool Env from \"env://process\"\n\nmain agent A {\n    main func(input) {\n        return Env.get({ name: \"DATABASE_URL\" })\n    }\n}\n",
    )
    .expect("program");
    let out = Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .args(["as", "run", "e.as"])
        .current_dir(d)
        .env("XDG_CONFIG_HOME", &cfg)
        .env("DATABASE_URL", "postgres://a:b@h/db")
        .output()
        .expect("run");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "\"postgres://a:b@h/db\"\n"
    );
}

/// The next variant: `printenv` is ReadOnly and its output reaches the chat, so commands never
/// get the user's secrets in their environment, unless `Programs.Env` names one exactly.
#[test]
fn commands_never_see_secret_environment_variables() {
    let fx = common::Fixture::new();
    let files = fx.reply_files(&[&common::run_cmd("printenv")]);
    let run = |fx: &common::Fixture| {
        let out = fx
            .host()
            .args(["run", "--mode", "ask", "--workspace"])
            .arg(fx.ws())
            .args(&files)
            .env("GITHUB_TOKEN", "ghp_c4nary0123456789abcdefghijklmn")
            .env("DATABASE_URL", "postgres://app:c4nary@db.example.com/app")
            .env("KEYLESS_VISIBLE", "yes")
            .output()
            .expect("run");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = run(&fx);
    assert!(text.contains("KEYLESS_VISIBLE=yes"), "{text}");
    assert!(!text.contains("c4nary"), "{text}");
    // The model is told which names are withheld (names only), so a failing command is explained.
    assert!(text.contains("status: ok"), "{text}");
    std::fs::create_dir_all(fx.user_config()).expect("cfg");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        r#"{"Programs": {"Env": ["DATABASE_URL"]}}"#,
    )
    .expect("config");
    let text = run(&fx);
    assert!(
        text.contains("DATABASE_URL=postgres://app:c4nary@db.example.com/app"),
        "{text}"
    );
    assert!(!text.contains("ghp_c4nary"), "{text}");
}

#[test]
fn an_mcp_server_program_is_never_taken_from_a_temp_folder_on_path() {
    let fx = common::Fixture::new();
    let canary = fx.root.join("canary-mcp");
    let name = format!("keyless-test-mcp-{}", std::process::id());
    let mut planted = Vec::new();
    for folder in [std::env::temp_dir(), PathBuf::from("/dev/shm")] {
        let dir = folder.join(format!("keyless-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("bin");
        let p = dir.join(&name);
        std::fs::write(&p, format!("#!/bin/sh\necho ran > {}\n", canary.display()))
            .expect("server");
        common::make_executable(&p);
        planted.push(dir);
    }
    std::fs::create_dir_all(fx.user_config()).expect("cfg");
    std::fs::write(
        fx.user_config().join("keyless.json"),
        serde_json::json!({"Mcp": {"Servers": {"planted": {"Command": name}}}}).to_string(),
    )
    .expect("config");
    let path = format!(
        "{}:{}:{}",
        planted[0].display(),
        planted[1].display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = fx
        .host()
        .args(["mcp", "list", "--json", "--workspace"])
        .arg(fx.ws())
        .env("PATH", path)
        .output()
        .expect("mcp list");
    let text = String::from_utf8_lossy(&out.stdout);
    for d in &planted {
        let _ = std::fs::remove_dir_all(d);
    }
    assert!(text.contains("KA_MCP_UNAVAILABLE"), "{text}");
    assert!(
        text.contains("KA_LAUNCH_REFUSED")
            && text.contains("not in a PATH folder the model cannot write"),
        "{text}"
    );
    assert!(!canary.exists(), "a server planted in a temp folder ran");
}

#[test]
fn a_submodules_git_folder_keeps_no_program_of_the_commands_choosing() {
    let fx = common::Fixture::new();
    // A submodule: its git folder lives in the workspace's .git/modules/lib.
    common::git(&fx.root, &["init", "-q", "--bare", "lib.git"]);
    common::git(&fx.root, &["clone", "-q", "lib.git", "lib-work"]);
    let work = fx.root.join("lib-work");
    std::fs::write(work.join("x.txt"), "x\n").expect("x");
    common::commit_all(&work, "x");
    common::git(&work, &["push", "-q", "origin", "HEAD"]);
    common::git(
        &fx.ws(),
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            fx.root.join("lib.git").to_str().expect("utf8"),
            "lib",
        ],
    );
    common::git(&fx.ws(), &["commit", "-qm", "submodule"]);
    let (c1, c2) = (
        fx.root.join("canary-sub-fsmonitor"),
        fx.root.join("canary-sub-hook"),
    );
    // Approved: the command may write .git, so the submodule's config and hooks are writable;
    // the top-level `git status` runs the submodule's fsmonitor when it looks inside.
    let line = format!(
        "git -C lib config core.fsmonitor \"{}\"; printf '#!/bin/sh\\necho ran > {}\\n' > .git/modules/lib/hooks/post-checkout; chmod +x .git/modules/lib/hooks/post-checkout; echo done",
        fsmonitor(&c1),
        c2.display()
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "ask", "--yes"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    users_git(&fx.ws());
    let _ = Command::new("git")
        .args(["submodule", "update", "--checkout", "--force"])
        .current_dir(fx.ws())
        .output();
    users_git(&fx.ws().join("lib"));
    canary_gone(&[c1, c2], &text);
    assert!(
        !std::fs::read_to_string(fx.ws().join(".git/modules/lib/config"))
            .expect("config")
            .contains("fsmonitor"),
        "{text}"
    );
}

/// The guard lists again only the folders whose times changed since its last scan: a repository
/// made deep inside old folders, and a `.git` file rewritten in place (which changes no folder's
/// times), are still found on the second command of a run.
#[test]
fn the_guard_finds_changes_in_folders_it_did_not_list_again() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join("old/a/b")).expect("dirs");
    std::fs::create_dir_all(ws.join("old/link")).expect("dirs");
    common::git(&fx.root, &["init", "-q", "--bare", "other.git"]);
    std::fs::write(ws.join("old/link/.git"), "gitdir: ../../.git\n").expect(".git file");
    // Old enough that the scans trust their times.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let canary = fx.root.join("canary-deep");
    let attack = format!(
        "printf 'gitdir: {}\\n' > old/link/.git; git init -q old/a/b/sub && git -C old/a/b/sub config core.fsmonitor \"{}\"; echo done",
        fx.root.join("other.git").display(),
        fsmonitor(&canary)
    );
    let (_, text) = fx.run(
        &[&common::run_cmd("echo warm"), &common::run_cmd(&attack)],
        &["--mode", "auto"],
    );
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(text.contains("old/a/b/sub/.git/config"), "{text}");
    assert!(text.contains("old/link/.git"), "{text}");
    assert_eq!(
        std::fs::read_to_string(ws.join("old/link/.git")).expect(".git"),
        "gitdir: ../../.git\n"
    );
    users_git(&ws.join("old/a/b/sub"));
    canary_gone(std::slice::from_ref(&canary), &text);
    // Positive control: the same attack without keyless runs the fsmonitor.
    let control = common::Fixture::new();
    let cws = control.ws();
    std::fs::create_dir_all(cws.join("old/a/b")).expect("dirs");
    runs_without_keyless(&cws, &attack, &[canary], || {
        users_git(&cws.join("old/a/b/sub"));
    });
}

#[test]
fn repositories_made_of_symlinks_are_repositories_too() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    std::fs::create_dir_all(ws.join("src")).expect("src");
    let c = |n: &str| fx.root.join(format!("canary-{n}"));
    // A folder that borrows the workspace's history through symlinks, with a HEAD that is a
    // symlink: `git status` there looks normal and runs the config's fsmonitor.
    let stealth = format!(
        "cd src && ln -s ../.git/objects objects && ln -s ../.git/refs refs && ln -s ../.git/index index && ln -s refs/heads/feature HEAD && printf '[core]\\n\\tworktree = ..\\n\\tfsmonitor = \"%s\"\\n' \"{}\" > config; cd ..; \
         mkdir -p a && touch a/objects && chmod +x a/objects && mkdir a/refs && echo 'ref: refs/heads/x' > a/HEAD && git config -f a/config core.fsmonitor \"{}\"; \
         mkdir -p sub/.git/objects sub/.git/refs && ln -s refs/heads/main sub/.git/HEAD && git config -f sub/.git/config core.fsmonitor \"{}\"; echo done",
        fsmonitor(&c("stealth")).replace('"', "\\\""),
        fsmonitor(&c("exec-objects")),
        fsmonitor(&c("nested-link-head")),
    );
    let (_, text) = fx.run(&[&common::run_cmd(&stealth)], &["--mode", "auto"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    for (dir, n) in [
        ("src", "stealth"),
        ("a", "exec-objects"),
        ("sub", "nested-link-head"),
    ] {
        users_git(&ws.join(dir));
        canary_gone(&[c(n)], &text);
    }
    // Positive control: the same line without keyless makes a repository in sub/ whose git
    // runs the fsmonitor. Not for "stealth" (src/) nor "exec-objects" (a/): git there says
    // "this operation must be run in a work tree" and runs nothing even without keyless, so
    // those two canaries prove nothing yet.
    let control = common::Fixture::new();
    let cws = control.ws();
    std::fs::create_dir_all(cws.join("src")).expect("src");
    runs_without_keyless(&cws, &stealth, &[c("nested-link-head")], || {
        users_git(&cws.join("sub"));
    });
    // The symlinked folder is a repository to the write check too: its config is refused.
    let write = common::reply(&[common::block(
        "newfile src/config",
        &[("CONTENT", "[core]\n\tfsmonitor = x")],
    )]);
    let (_, text) = fx.run(&[&write], &["--mode", "auto"]);
    assert!(text.contains("code: KA_PATH_OUTSIDE"), "{text}");
    assert!(!ws.join("src/config").exists(), "{text}");
}

#[test]
fn a_working_tree_dressed_as_a_repository_is_still_looked_into() {
    let fx = common::Fixture::new();
    let canary = fx.root.join("canary-dressed");
    // `sub` holds a real repository with an fsmonitor, and files named HEAD, objects and refs
    // beside it, so that it looks like a bare repository itself: git still takes `sub/.git`.
    let line = format!(
        "git init -q sub && git -C sub config core.fsmonitor \"{}\" && touch sub/HEAD sub/objects sub/refs; echo done",
        fsmonitor(&canary)
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "auto"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    users_git(&fx.ws().join("sub"));
    canary_gone(std::slice::from_ref(&canary), &text);
    // Positive control: the same line without keyless, and the user's git in sub runs it.
    let control = common::Fixture::new();
    runs_without_keyless(&control.ws(), &line, &[canary], || {
        users_git(&control.ws().join("sub"));
    });
}

#[test]
fn an_embedded_repository_added_to_the_index_runs_nothing() {
    let fx = common::Fixture::new();
    let canary = fx.root.join("canary-gitlink");
    // Approved: a repository with a symlinked HEAD and an fsmonitor, added to the index as a
    // gitlink, so the user's `git status` at the root would look inside it.
    let line = format!(
        "git init -q vendor/lib && cd vendor/lib && git -c user.name=M -c user.email=m@x commit -q --allow-empty -m x && rm .git/HEAD && ln -s refs/heads/master .git/HEAD; git config core.fsmonitor \"{}\"; cd ../..; git add vendor/lib; echo done",
        fsmonitor(&canary)
    );
    let (_, text) = fx.run(&[&common::run_cmd(&line)], &["--mode", "ask", "--yes"]);
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    users_git(&fx.ws());
    canary_gone(std::slice::from_ref(&canary), &text);
    // Positive control: the same line without keyless, and the user's git status runs it.
    let control = common::Fixture::new();
    runs_without_keyless(&control.ws(), &line, &[canary], || {
        users_git(&control.ws());
    });
}

#[test]
fn a_command_cannot_make_or_change_keyless_json() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    let (_, text) = fx.run(
        &[&common::run_cmd(
            "echo '{\"Commands\": {\"TimeoutSeconds\": 100000}}' > keyless.json; echo done",
        )],
        &["--mode", "auto"],
    );
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    assert!(
        text.contains("keyless.json holds keyless's own settings"),
        "{text}"
    );
    assert!(!ws.join("keyless.json").exists(), "{text}");
    // keyless still starts: nothing of the model's reached the next session.
    let (out, text) = fx.run(&[&common::run_cmd("echo next")], &["--mode", "auto"]);
    assert_eq!(out.status.code(), Some(5), "{text}");
}

/// The later commands of a run are checked from what the kernel saw them change (the change
/// journal), and that misses nothing: a repository moved in from the temp folder, one made in a
/// folder renamed in the same command, a hook written into a repository that was already there,
/// one made where a folder was moved away and another made in its place, and one planted in a
/// quiet folder after more changes than the kernel's event queue holds (16,384 events by
/// default) were made in another.
#[test]
fn the_guard_sees_what_every_later_command_of_a_run_did() {
    let fx = common::Fixture::new();
    let ws = fx.ws();
    let setup = |ws: &Path| {
        std::fs::create_dir_all(ws.join("old/a/b")).expect("dirs");
        std::fs::create_dir_all(ws.join("many")).expect("dirs");
        std::fs::create_dir_all(ws.join("old2/x/y")).expect("dirs");
        std::fs::create_dir_all(ws.join("quiet")).expect("dirs");
        std::fs::create_dir_all(ws.join(".agent/sandbox-tmp")).expect("tmp");
        common::git(ws, &["init", "-q", "kept/r"]);
    };
    setup(&ws);
    let c = |n: &str| fx.root.join(format!("canary-{n}"));
    let canaries = [
        c("moved-in"),
        c("renamed"),
        c("hook"),
        c("flood"),
        c("replaced"),
    ];
    let cmds = [
        "true".to_string(),
        format!(
            "git init -q .agent/sandbox-tmp/r && git -C .agent/sandbox-tmp/r config core.fsmonitor \"{}\" && mv .agent/sandbox-tmp/r old/a/b/r",
            fsmonitor(&canaries[0])
        ),
        format!(
            "mv old/a old/moved && git init -q old/moved/b/r2 && git -C old/moved/b/r2 config core.fsmonitor \"{}\"",
            fsmonitor(&canaries[1])
        ),
        format!(
            "mv old2/x old2/gone && mkdir -p old2/x/y && git init -q old2/x/y/r3 && git -C old2/x/y/r3 config core.fsmonitor \"{}\"",
            fsmonitor(&canaries[4])
        ),
        format!(
            "printf '#!/bin/sh\\necho ran > {}\\n' > kept/r/.git/hooks/pre-commit && chmod +x kept/r/.git/hooks/pre-commit",
            canaries[2].display()
        ),
        format!(
            "i=0; while [ $i -lt 12000 ]; do : > many/$i; i=$((i+1)); done; git init -q quiet/zz && git -C quiet/zz config core.fsmonitor \"{}\"",
            fsmonitor(&canaries[3])
        ),
    ];
    let blocks: Vec<String> = cmds
        .iter()
        .map(|l| common::block("runcommand", &[("CMD", l)]))
        .collect();
    let (_, text) = fx.run(
        &[&common::reply(&blocks)],
        &[
            "--mode",
            "auto",
            "--pace",
            "batch",
            "--failure-mode",
            "Continue",
            "--max-commands",
            "10",
        ],
    );
    assert!(text.contains("code: KA_GIT_PROTECTED"), "{text}");
    for p in [
        "old/a/b/r/.git/config",
        "old/moved/b/r2/.git/config",
        "kept/r/.git/hooks/pre-commit",
        "quiet/zz/.git/config",
        "old2/x/y/r3/.git/config",
    ] {
        assert!(text.contains(p), "{p} not put back: {text}");
    }
    let users = |ws: &Path| {
        for d in [
            "old/a/b/r",
            "old/moved/b/r",
            "old/moved/b/r2",
            "kept/r",
            "quiet/zz",
            "old2/x/y/r3",
        ] {
            if ws.join(d).is_dir() {
                users_git(&ws.join(d));
            }
        }
    };
    users(&ws);
    canary_gone(&canaries, &text);
    // Positive control: the same lines without keyless write every canary.
    let control = common::Fixture::new();
    let cws = control.ws();
    setup(&cws);
    runs_without_keyless(&cws, &cmds.join("; "), &canaries, || users(&cws));
}
