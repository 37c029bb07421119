//! A `[hosts.<name>]` table of `firstmate.toml`: where a host is and how
//! to reach it. Read with the rest of the config (unknown keys warn there,
//! with their line); used by `remote::ssh`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// The configured hosts by name, sorted (the fleet view's host order).
pub type Hosts = BTreeMap<String, HostCfg>;

/// One host.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(expecting = "a [hosts.<name>] table")]
pub struct HostCfg {
    /// What `ssh` takes: `user@box`, or an alias of the captain's ssh
    /// config.
    pub destination: String,
    /// The firstmate home on that host; absolute, since it is used from
    /// whatever directory a login starts in.
    #[serde(deserialize_with = "absolute")]
    pub home: PathBuf,
    /// Extra `ssh` arguments, before the destination (`["-F", "file"]`).
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// The directory holding that host's `fm-*` tools; empty: the login's
    /// `PATH` finds them. A non-interactive login reads no shell start-up
    /// file on most systems, so a `~/.cargo/bin` install needs this.
    #[serde(default)]
    pub bin: String,
    /// Bound on one round trip, connection included, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    5000
}

impl HostCfg {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }

    /// The far path of tool `name` (`fm-status`, …).
    pub fn tool(&self, name: &str) -> String {
        if self.bin.is_empty() {
            return name.to_string();
        }
        format!("{}/{name}", self.bin.trim_end_matches('/'))
    }
}

fn absolute<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    let s = String::deserialize(d)?;
    if !s.starts_with('/') {
        return Err(serde::de::Error::custom(format!(
            "expected an absolute path, got {s:?}"
        )));
    }
    Ok(PathBuf::from(s))
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    fn load(text: &str) -> crate::Result<Config> {
        Config::from_parts(Path::new("firstmate.toml"), Some(text), &[])
    }

    #[test]
    fn a_host_table_is_read_with_its_defaults() {
        let c = load(
            "[hosts.box]\ndestination = \"me@box\"\nhome = \"/srv/fm\"\nssh_options = [\"-F\", \"/c\"]\n",
        )
        .unwrap();
        let h = &c.hosts["box"];
        assert_eq!(h.destination, "me@box");
        assert_eq!(h.home, Path::new("/srv/fm"));
        assert_eq!(h.ssh_options, ["-F", "/c"]);
        assert_eq!(h.timeout_ms, 5000);
        assert_eq!(h.tool("fm-status"), "fm-status");
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let c = load(
            "[hosts.b]\ndestination = \"b\"\nhome = \"/h\"\nbin = \"/opt/fm/\"\ntimeout_ms = 300\n",
        )
        .unwrap();
        assert_eq!(c.hosts["b"].tool("fm-send"), "/opt/fm/fm-send");
        assert_eq!(c.hosts["b"].timeout().as_millis(), 300);
    }

    #[test]
    fn a_bad_host_table_names_its_line_and_key() {
        let msg = |t: &str| load(t).unwrap_err().to_string();
        assert_eq!(
            msg("[hosts.box]\ndestination = \"b\"\nhome = \"fm\"\n"),
            "firstmate.toml:3: hosts.box.home: expected an absolute path, got \"fm\""
        );
        assert!(
            msg("[hosts.box]\nhome = \"/h\"\n").contains("missing field `destination`"),
            "{}",
            msg("[hosts.box]\nhome = \"/h\"\n")
        );
        assert_eq!(
            msg("[hosts.box]\ndestination = \"b\"\nhome = \"/h\"\nssh_options = \"-v\"\n"),
            "firstmate.toml:4: hosts.box.ssh_options: expected an array of strings"
        );
        let c = load("[hosts.box]\ndestination = \"b\"\nhome = \"/h\"\nport = 22\n").unwrap();
        assert_eq!(
            c.warnings,
            ["firstmate.toml:4: unknown key hosts.box.port (ignored)"]
        );
    }
}
