//! Who may use the cockpit, decided per request: the captain's token, the
//! session cookie it turns into, the anti-forgery token of each form, and
//! the same-origin check of every state-changing request
//! (docs/spec/serve.md#security).
//!
//! Everything here is derived from the token, so nothing is kept on disk
//! but the token itself and a restarted `fm serve` still knows the
//! captain's phone:
//! - a session cookie is `<sid>.<mac>`, a random id and its HMAC under the
//!   token; a forged or stale cookie (the token was replaced) fails;
//! - a form's `csrf` is the HMAC of the cookie under a secret derived from
//!   the token, so a page of one session cannot post for another.
//!
//! Every comparison of a secret is constant-time ([`ct_eq`]). HMAC-SHA256
//! is the `hmac` crate's over the `sha2` already in the tree, held to the
//! RFC 4231 vectors below.

use sha2::Sha256;

/// The session cookie's name.
pub const COOKIE: &str = "fm_session";

/// HMAC-SHA256 of `msg` under `key` (RFC 2104), by the `hmac` crate.
pub fn hmac(key: &[u8], msg: &[u8]) -> [u8; 32] {
    use hmac::Mac as _;
    let mut m = hmac::Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    m.update(msg);
    m.finalize().into_bytes().into()
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths
/// only.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// `n` random bytes from the kernel (getrandom), as hex.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(k) => filled += k,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(hex(&buf))
}

/// The keys of one token.
#[derive(Clone)]
pub struct Keys {
    token: Vec<u8>,
    secret: [u8; 32],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

impl Keys {
    pub fn new(token: &str) -> Keys {
        Keys {
            token: token.as_bytes().to_vec(),
            secret: hmac(token.as_bytes(), b"fm serve: anti-forgery secret"),
        }
    }

    /// Whether `given` is the token.
    pub fn token_ok(&self, given: &str) -> bool {
        ct_eq(given.as_bytes(), &self.token)
    }

    fn session_mac(&self, sid: &str) -> String {
        hex(&hmac(&self.token, format!("session:{sid}").as_bytes()))
    }

    /// A new session cookie's value.
    pub fn new_session(&self) -> std::io::Result<String> {
        let sid = random_hex(16)?;
        let mac = self.session_mac(&sid);
        Ok(format!("{sid}.{mac}"))
    }

    /// Whether `cookie` is a session this token made.
    pub fn session_ok(&self, cookie: &str) -> bool {
        let Some((sid, mac)) = cookie.split_once('.') else {
            return false;
        };
        sid.len() == 32 && ct_eq(mac.as_bytes(), self.session_mac(sid).as_bytes())
    }

    /// The anti-forgery token of session `cookie`'s forms.
    pub fn csrf(&self, cookie: &str) -> String {
        hex(&hmac(&self.secret, format!("csrf:{cookie}").as_bytes()))
    }

    /// Whether `given` is session `cookie`'s anti-forgery token.
    pub fn csrf_ok(&self, cookie: &str, given: &str) -> bool {
        ct_eq(given.as_bytes(), self.csrf(cookie).as_bytes())
    }
}

/// The value of cookie `name` in a `Cookie:` header.
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// The `Set-Cookie:` value of a session.
pub fn set_cookie(value: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/{secure}")
}

/// `scheme://host[:port]` of a URL, lower-cased; `None` for anything that
/// is not an http(s) URL with a host.
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    Some(format!("{scheme}://{}", authority.to_ascii_lowercase()))
}

/// Which `Host`s and origins the server answers as.
#[derive(Debug, Clone)]
pub struct Origins {
    /// The `Host` values accepted; `None`: any (a listener on every
    /// address without a public URL, where the origin must still be the
    /// request's own).
    hosts: Option<Vec<String>>,
    /// The scheme the browser sees: `https` under TLS or behind an https
    /// public URL.
    scheme: &'static str,
    /// The public URL's origin, if one is configured.
    public: Option<String>,
}

impl Origins {
    pub fn new(listen: std::net::SocketAddr, tls: bool, public_url: Option<&str>) -> Origins {
        let port = listen.port();
        let public = public_url.and_then(origin_of);
        let mut hosts = Vec::new();
        if let Some(p) = &public {
            hosts.push(p.split_once("://").map_or("", |x| x.1).to_string());
        }
        let ip = listen.ip();
        let any = ip.is_unspecified();
        if !any {
            hosts.push(listen.to_string());
            if ip.is_loopback() {
                hosts.push(format!("localhost:{port}"));
            }
        }
        Origins {
            hosts: (!any || public.is_some()).then_some(hosts),
            scheme: if tls { "https" } else { "http" },
            public,
        }
    }

    /// Whether the server answers as `host` (a `Host:` header): a page
    /// fetched through another name (DNS rebinding) is refused.
    pub fn host_ok(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.as_ref().is_none_or(|hs| hs.contains(&host))
    }

    /// Whether a state-changing request comes from one of the server's
    /// own pages: `Origin` (else the origin of `Referer`) is the request's
    /// own `scheme://Host` or the public URL's. `Err` says why not.
    pub fn same_origin(
        &self,
        host: &str,
        origin: Option<&str>,
        referer: Option<&str>,
    ) -> Result<(), String> {
        let from = match (origin, referer) {
            (Some(o), _) => origin_of(o).ok_or_else(|| format!("Origin {o:?} is not an origin"))?,
            (None, Some(r)) => origin_of(r).ok_or_else(|| "Referer is not a URL".to_string())?,
            (None, None) => return Err("neither Origin nor Referer was sent".into()),
        };
        let own = format!("{}://{}", self.scheme, host.to_ascii_lowercase());
        if self.host_ok(host) && (from == own || self.public.as_ref() == Some(&from)) {
            Ok(())
        } else {
            Err(format!("cross-origin request from {from}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_is_rfc_4231_case_2() {
        let mac = hmac(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // A key longer than the block is hashed first (case 6).
        let mac = hmac(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex(&mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn constant_time_equality_is_equality() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
        assert!(ct_eq(b"", b""));
    }

    #[test]
    fn a_session_is_the_tokens_and_its_csrf_is_its_own() {
        let k = Keys::new("t0ken");
        let a = k.new_session().unwrap();
        let b = k.new_session().unwrap();
        assert_ne!(a, b);
        assert!(k.session_ok(&a) && k.session_ok(&b));
        assert!(!Keys::new("other").session_ok(&a), "another token's");
        let (sid, _) = a.split_once('.').unwrap();
        assert!(!k.session_ok(&format!("{sid}.00")), "a forged mac");
        assert!(!k.session_ok(sid));
        assert!(k.csrf_ok(&a, &k.csrf(&a)));
        assert!(!k.csrf_ok(&b, &k.csrf(&a)), "another session's");
        assert!(!k.csrf_ok(&a, ""));
        assert!(k.token_ok("t0ken") && !k.token_ok("t0ke") && !k.token_ok("t0ken "));
    }

    #[test]
    fn cookies_are_found_by_name() {
        let h = "a=1; fm_session=abc.def ;b=2";
        assert_eq!(cookie_value(h, COOKIE), Some("abc.def"));
        assert_eq!(cookie_value(h, "b"), Some("2"));
        assert_eq!(cookie_value("xfm_session=1", COOKIE), None);
        assert_eq!(cookie_value("", COOKIE), None);
        assert_eq!(
            set_cookie("v", true),
            "fm_session=v; HttpOnly; SameSite=Strict; Path=/; Secure"
        );
        assert!(!set_cookie("v", false).contains("Secure"));
    }

    #[test]
    fn origins_parse_to_scheme_and_authority() {
        assert_eq!(
            origin_of("HTTP://127.0.0.1:7878/x?y").as_deref(),
            Some("http://127.0.0.1:7878")
        );
        assert_eq!(
            origin_of("https://fleet.example").as_deref(),
            Some("https://fleet.example")
        );
        assert_eq!(origin_of("null"), None);
        assert_eq!(origin_of("file:///etc"), None);
        assert_eq!(origin_of("http://u@evil/"), None);
    }

    #[test]
    fn only_the_servers_own_origin_may_post() {
        let o = Origins::new("127.0.0.1:7878".parse().unwrap(), false, None);
        let h = "127.0.0.1:7878";
        assert!(
            o.same_origin(h, Some("http://127.0.0.1:7878"), None)
                .is_ok()
        );
        assert!(
            o.same_origin("localhost:7878", Some("http://localhost:7878"), None)
                .is_ok()
        );
        assert!(
            o.same_origin(h, None, Some("http://127.0.0.1:7878/task/a"))
                .is_ok()
        );
        assert!(o.same_origin(h, Some("http://evil.example"), None).is_err());
        assert!(o.same_origin(h, Some("null"), None).is_err());
        assert!(o.same_origin(h, None, None).is_err());
        assert!(
            o.same_origin(h, Some("https://127.0.0.1:7878"), None)
                .is_err()
        );
        // DNS rebinding: the attacker's name resolves to loopback.
        assert!(!o.host_ok("evil.example:7878"));
        assert!(
            o.same_origin("evil.example:7878", Some("http://evil.example:7878"), None)
                .is_err()
        );
        let p = Origins::new(
            "127.0.0.1:7878".parse().unwrap(),
            false,
            Some("https://fleet.example/"),
        );
        assert!(p.host_ok("fleet.example"));
        assert!(
            p.same_origin("fleet.example", Some("https://fleet.example"), None)
                .is_ok()
        );
        let any = Origins::new("0.0.0.0:7878".parse().unwrap(), true, None);
        assert!(
            any.same_origin("box:7878", Some("https://box:7878"), None)
                .is_ok()
        );
        assert!(
            any.same_origin("box:7878", Some("https://evil:7878"), None)
                .is_err()
        );
    }
}
