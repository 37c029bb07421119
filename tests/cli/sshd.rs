//! A real OpenSSH server for the remote-host tests: `sshd -D -e -f <own
//! config>` on 127.0.0.1 at a free port, with a generated host key and a
//! generated user key, killed by pid on drop.
//!
//! The far side is a dedicated account, [`ACCOUNT`] (created when missing:
//! shell `/bin/sh`, a password field of `*`, so it has no password yet is
//! not a locked account, which sshd would refuse). Each fixture gives it a
//! firstmate home of its own under the account's home directory, with the
//! tools under test copied into that home's `bin/`, so the far side runs
//! as another user, with its own tmux server and no start-up file of the
//! captain's account.
//!
//! An sshd that serves more than its own user must run as root, and only
//! root can create the account: the fixture needs both. A missing sshd or
//! a non-root run skips the test with a printed reason, or fails it under
//! `FM_REQUIRE_SSHD=1` (CI sets it).

use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::harness::{bin, unmet, wait_until};

/// The far side's login.
pub const ACCOUNT: &str = "fm-remote";

/// The ssh alias the fixture's client config defines.
pub const ALIAS: &str = "far";

const SSHD: &str = "/usr/sbin/sshd";

static N: AtomicUsize = AtomicUsize::new(0);

pub struct Sshd {
    /// Keys, configs and the server's log (mode 0755: the account reads
    /// `authorized_keys` from here).
    pub dir: tempfile::TempDir,
    child: Option<Child>,
    pub port: u16,
    /// The far firstmate home, owned by [`ACCOUNT`].
    pub far_home: PathBuf,
    /// The far tmux socket name (in the far home's config).
    pub far_socket: String,
}

#[track_caller]
fn run(program: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The account's passwd entry fields, if it exists.
fn passwd_entry() -> Option<Vec<String>> {
    let out = Command::new("getent")
        .args(["passwd", ACCOUNT])
        .output()
        .ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .split(':')
            .map(String::from)
            .collect()
    })
}

/// Creates [`ACCOUNT`] when missing and makes sure it is not locked;
/// returns its home directory.
#[track_caller]
fn ensure_account() -> PathBuf {
    if passwd_entry().is_none() {
        // Tests create it concurrently: "already exists" (exit 9) is fine.
        let out = Command::new("useradd")
            .args(["--create-home", "--shell", "/bin/sh", ACCOUNT])
            .output()
            .expect("useradd");
        assert!(
            out.status.success() || out.status.code() == Some(9),
            "useradd: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let status = run("passwd", &["--status", ACCOUNT]);
    if String::from_utf8_lossy(&status.stdout)
        .split_whitespace()
        .nth(1)
        == Some("L")
    {
        run("usermod", &["--password", "*", ACCOUNT]);
    }
    let entry = passwd_entry().expect("the account exists now");
    assert_eq!(entry[6], "/bin/sh", "{ACCOUNT}'s shell");
    let home = PathBuf::from(&entry[5]);
    std::fs::create_dir_all(&home).unwrap();
    run("chown", &[ACCOUNT, &home.to_string_lossy()]);
    home
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Pids of every live descendant of `pid` (from `/proc/*/stat`).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …; comm may hold spaces and parentheses.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|s| s.parse().ok()) {
            parent_of.push((p, ppid));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for &(c, pp) in &parent_of {
            if pp == p && !out.contains(&c) {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid this fixture started (or one of its
    // descendants) and a plain signal number.
    unsafe {
        libc::kill(i32::try_from(pid).expect("a pid fits in i32"), sig);
    }
}

impl Sshd {
    /// A running server with a fresh far home, or `None` (with a printed
    /// reason) when sshd or root is missing.
    #[track_caller]
    pub fn start() -> Option<Sshd> {
        if !Path::new(SSHD).exists() {
            unmet("sshd (openssh-server)", "FM_REQUIRE_SSHD");
            return None;
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            unmet(
                "root (to create the far account and serve it)",
                "FM_REQUIRE_SSHD",
            );
            return None;
        }
        let account_home = ensure_account();
        // sshd's privilege separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();

        let dir = tempfile::Builder::new()
            .prefix("fm-sshd-")
            .tempdir()
            .unwrap();
        let d = dir.path().canonicalize().unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let key = |name: &str| {
            let p = d.join(name);
            run(
                "ssh-keygen",
                &[
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    name,
                    "-f",
                    &p.to_string_lossy(),
                ],
            );
            std::fs::read_to_string(p.with_extension("pub")).unwrap()
        };
        let host_pub = key("host_key");
        let user_pub = key("id_ed25519");
        std::fs::write(d.join("authorized_keys"), &user_pub).unwrap();
        std::fs::write(d.join("known_hosts"), format!("{ALIAS} {host_pub}")).unwrap();

        let n = N.fetch_add(1, Ordering::Relaxed);
        let tag = format!("fm-test-{}-{n}", std::process::id());
        let far_home = account_home.join(&tag);
        let far_socket = format!("{tag}-far");
        for sub in ["config", "data", "state", "bin"] {
            std::fs::create_dir_all(far_home.join(sub)).unwrap();
        }
        std::fs::write(
            far_home.join("config/firstmate.toml"),
            format!("[tmux]\nsocket = \"{far_socket}\"\n"),
        )
        .unwrap();
        let built = bin("fm").parent().unwrap().to_path_buf();
        for e in std::fs::read_dir(&built).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_tool = name == "fm" || (name.starts_with("fm-") && !name.contains('.'));
            if is_tool && e.path().is_file() {
                std::fs::copy(e.path(), far_home.join("bin").join(&name)).unwrap();
            }
        }

        let mut sshd = Sshd {
            dir,
            child: None,
            port: 0,
            far_home,
            far_socket,
        };
        sshd.chown_far();
        for _ in 0..5 {
            let port = free_port();
            sshd.port = port;
            Sshd::write_configs(&d, port);
            if sshd.spawn() {
                return Some(sshd);
            }
            // The port was taken meanwhile: try another.
            let _ = sshd.child.take().map(|mut c| c.wait());
        }
        panic!("sshd would not start: {}", sshd.log());
    }

    /// Starts `sshd` on the configured port; whether it came up.
    fn spawn(&mut self) -> bool {
        let d = self.dir.path().canonicalize().unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.join("sshd.log"))
            .unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        self.child = Some(child);
        let port = self.port;
        let up = wait_until(10.0, || {
            TcpStream::connect(("127.0.0.1", port)).is_ok() || self.exited()
        });
        up && !self.exited()
    }

    /// Starts the server again, on the same port, after [`Sshd::kill`]:
    /// the host is back.
    #[track_caller]
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "restart needs a killed server");
        assert!(self.spawn(), "sshd would not restart: {}", self.log());
    }

    fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| c.try_wait().ok().flatten().is_some())
    }

    fn write_configs(d: &Path, port: u16) {
        let d = d.display();
        std::fs::write(
            format!("{d}/sshd_config"),
            format!(
                "ListenAddress 127.0.0.1:{port}\n\
                 HostKey {d}/host_key\n\
                 PidFile none\n\
                 AuthorizedKeysFile {d}/authorized_keys\n\
                 AuthenticationMethods publickey\n\
                 PasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n\
                 UsePAM no\n\
                 StrictModes no\n\
                 PermitRootLogin no\n\
                 AllowUsers {ACCOUNT}\n\
                 X11Forwarding no\n\
                 PrintMotd no\n\
                 MaxSessions 64\n\
                 MaxStartups 64\n"
            ),
        )
        .unwrap();
        std::fs::write(
            format!("{d}/ssh_config"),
            format!(
                "Host {ALIAS}\n\
                 \x20 HostName 127.0.0.1\n\
                 \x20 Port {port}\n\
                 \x20 User {ACCOUNT}\n\
                 \x20 IdentityFile {d}/id_ed25519\n\
                 \x20 IdentitiesOnly yes\n\
                 \x20 HostKeyAlias {ALIAS}\n\
                 \x20 UserKnownHostsFile {d}/known_hosts\n\
                 \x20 GlobalKnownHostsFile /dev/null\n\
                 \x20 StrictHostKeyChecking yes\n\
                 \x20 LogLevel ERROR\n"
            ),
        )
        .unwrap();
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join("ssh_config")
    }

    /// A `[hosts.<name>]` table reaching the far home through this server.
    pub fn host_toml(&self, name: &str, timeout_ms: u64) -> String {
        format!(
            "[hosts.{name}]\ndestination = \"{ALIAS}\"\nhome = \"{}\"\nssh_options = [\"-F\", \"{}\"]\nbin = \"{}\"\ntimeout_ms = {timeout_ms}\n",
            self.far_home.display(),
            self.ssh_config().display(),
            self.far_home.join("bin").display(),
        )
    }

    /// Gives everything under the far home back to the account (after the
    /// test wrote files there as root).
    pub fn chown_far(&self) {
        run(
            "chown",
            &[
                "-R",
                &format!("{ACCOUNT}:"),
                &self.far_home.to_string_lossy(),
            ],
        );
    }

    /// Writes `rel` under the far home, owned by the account.
    #[track_caller]
    pub fn far_write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let p = self.far_home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        self.chown_far();
    }

    fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the server and every session it forked (`SIGSTOP`): the host
    /// hangs, connections stay open.
    pub fn freeze(&self) {
        if let Some(pid) = self.pid() {
            signal(pid, libc::SIGSTOP);
            for p in descendants(pid) {
                signal(p, libc::SIGSTOP);
            }
        }
    }

    pub fn thaw(&self) {
        if let Some(pid) = self.pid() {
            signal(pid, libc::SIGCONT);
            for p in descendants(pid) {
                signal(p, libc::SIGCONT);
            }
        }
    }

    /// Kills the server and its sessions by pid and reaps the server: the
    /// host is down (connection refused).
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id();
        let sessions = descendants(pid);
        for p in &sessions {
            signal(*p, libc::SIGCONT);
            signal(*p, libc::SIGKILL);
        }
        signal(pid, libc::SIGCONT);
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
        let _ = Command::new("runuser")
            .args([
                "-u",
                ACCOUNT,
                "--",
                "tmux",
                "-L",
                &self.far_socket,
                "kill-server",
            ])
            .output();
        let _ = std::fs::remove_dir_all(&self.far_home);
    }
}
