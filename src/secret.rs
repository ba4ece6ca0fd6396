//! Secrets and the redactor every output passes through.
//!
//! A [`Secret`] can only be created through a [`Redactor`], so a value cannot reach a
//! header without first being registered for redaction. `Debug` and `Display` never show
//! the value; only [`Secret::expose`] does, and only the HTTP layer calls it.
//!
//! The redactor masks more than the value as written: a server may echo a token cut
//! short, only its last characters, base64- or hex-encoded, or percent-encoded in a URL.
//! Every such form of every secret is cut into [`MIN_SECRET_LEN`]-byte windows
//! ("grams") kept in one hash table; a text is scanned once, window by window, and every
//! run of windows found in the table is replaced by `«redacted:label»`. So any run of at
//! least [`MIN_SECRET_LEN`] characters of any form is masked, wherever it starts, and a
//! 4 MiB text costs one table look-up per byte whatever the number of secrets.

mod forms;

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, RwLock};

pub use forms::{forms, named_forms};

/// Values shorter than this are not redacted: masking "a" would shred every message.
/// Loading rejects credentials this short, so no real secret slips through. It is also
/// the shortest run of a secret's form that counts as a leak.
pub const MIN_SECRET_LEN: usize = 8;

const GRAM: usize = MIN_SECRET_LEN;

#[derive(Clone, Default)]
pub struct Redactor {
    index: Arc<RwLock<Index>>,
}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `value` under `label` and returns the handle used to send it.
    pub fn register(&self, label: &str, value: String) -> Secret {
        if value.len() >= MIN_SECRET_LEN {
            self.index.write().expect("redactor lock poisoned").add(label, &value);
        }
        Secret { label: label.to_string(), value: Arc::from(value) }
    }

    /// `text` with every run of at least [`MIN_SECRET_LEN`] characters of any form of a
    /// registered secret (see [`forms`]) replaced by `«redacted:label»`.
    pub fn redact(&self, text: &str) -> String {
        self.index.read().expect("redactor lock poisoned").redact(text)
    }

    /// The labels of the registered secrets some form of which has a run of at least
    /// [`MIN_SECRET_LEN`] characters in `text`, each once, in the order found.
    pub fn found_in(&self, text: &str) -> Vec<String> {
        let index = self.index.read().expect("redactor lock poisoned");
        let mut labels: Vec<String> = Vec::new();
        let runs = index.runs(text.as_bytes());
        for run in index.without_protected(text, runs) {
            let label = &index.secrets[index.label_of(&run.tally)].label;
            if !labels.contains(label) {
                labels.push(label.clone());
            }
        }
        labels
    }

    /// Declares a name the scenario itself publishes (a provider, client, service, group,
    /// network or credential label): never masked, even where a secret's value happens to
    /// contain it (a token that begins with its provider's name would otherwise shred
    /// every check name). A name shorter than [`MIN_SECRET_LEN`] needs no protection.
    pub fn declare_public(&self, name: &str) {
        if name.len() >= MIN_SECRET_LEN {
            self.index.write().expect("redactor lock poisoned").declare_public(name);
        }
    }

    pub fn len(&self) -> usize {
        self.index.read().expect("redactor lock poisoned").secrets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

struct Known {
    label: String,
    value: String,
}

/// Every gram of every form, with the secrets it belongs to.
#[derive(Default)]
struct Index {
    secrets: Vec<Known>,
    grams: HashMap<u64, Vec<u32>, BuildHasherDefault<GramHasher>>,
    /// Bytes that occur in some form: a window holding any other byte cannot match.
    alphabet: [u64; 4],
    /// One bit per hash of a gram: most windows are rejected by one bit test, which
    /// stays fast even in an unoptimised build, before the table is asked.
    filter: Vec<u64>,
    /// Names the scenario publishes, longest first.
    public: Vec<String>,
}

const MARK_OPEN: &str = "«redacted:";
const MARK_CLOSE: char = '»';

/// 2^20 bits: a few thousand grams per secret leave most bits clear.
const FILTER_BITS: u32 = 20;

fn filter_slot(key: u64) -> (usize, u64) {
    let bit = mix(key) >> (64 - FILTER_BITS);
    ((bit >> 6) as usize, 1 << (bit & 63))
}

impl Index {
    fn add(&mut self, label: &str, value: &str) {
        if self.secrets.iter().any(|k| k.value == value) {
            return;
        }
        self.public.retain(|name| !name.contains(value));
        let owner = u32::try_from(self.secrets.len()).expect("fewer than 2^32 secrets");
        self.secrets.push(Known { label: label.to_string(), value: value.to_string() });
        for form in forms(value) {
            if self.filter.is_empty() {
                self.filter = vec![0; 1 << (FILTER_BITS - 6)];
            }
            for window in form.windows(GRAM) {
                let (word, bit) = filter_slot(gram(window));
                self.filter[word] |= bit;
                let owners = self.grams.entry(gram(window)).or_default();
                if owners.last() != Some(&owner) {
                    owners.push(owner);
                }
            }
            for b in form {
                self.alphabet[usize::from(b >> 6)] |= 1 << (b & 63);
            }
        }
    }

    fn declare_public(&mut self, name: &str) {
        // A name that holds a whole secret is no name: it would unmask the secret.
        if self.secrets.iter().any(|k| name.contains(k.value.as_str())) {
            return;
        }
        if !self.public.iter().any(|p| p == name) {
            self.public.push(name.to_string());
            self.public.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        }
    }

    fn redact(&self, text: &str) -> String {
        let runs = self.runs(text.as_bytes());
        if runs.is_empty() {
            return text.to_string();
        }
        let runs = self.without_protected(text, runs);
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        for run in runs {
            let (start, end) = widen_to_chars(text, run.start, run.end);
            if start < copied {
                // Widening joined it to the run before, whose marker already covers it.
                copied = copied.max(end);
                continue;
            }
            out.push_str(&text[copied..start]);
            out.push_str(MARK_OPEN);
            out.push_str(&self.secrets[self.label_of(&run.tally)].label);
            out.push(MARK_CLOSE);
            copied = end;
        }
        out.push_str(&text[copied..]);
        out
    }

    /// The runs with every marker (`«redacted:label»`, from an earlier pass) and every
    /// public name cut out of them. What is left of a run is still masked, however
    /// short: it is a piece of a secret that merely borders on a public name.
    fn without_protected(&self, text: &str, runs: Vec<Run>) -> Vec<Run> {
        let protected = self.protected_spans(text, &runs);
        if protected.is_empty() {
            return runs;
        }
        let mut out = Vec::with_capacity(runs.len());
        for run in runs {
            let mut start = run.start;
            for &(p_start, p_end) in protected.iter().filter(|(s, e)| *s < run.end && *e > run.start) {
                if p_start > start {
                    out.push(Run { start, end: p_start, tally: run.tally.clone() });
                }
                start = start.max(p_end);
            }
            if start < run.end {
                out.push(Run { start, end: run.end, tally: run.tally });
            }
        }
        out
    }

    /// Byte ranges of markers and public names that touch a run, sorted and merged. Only
    /// the text around runs is searched: runs are rare, texts can be megabytes.
    fn protected_spans(&self, text: &str, runs: &[Run]) -> Vec<(usize, usize)> {
        let longest_label = self.secrets.iter().map(|k| k.label.len()).max().unwrap_or(0);
        let reach = self.public.first().map_or(0, String::len).max(longest_label + MARK_OPEN.len() + 2);
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for run in runs {
            let (lo, hi) = widen_to_chars(text, run.start.saturating_sub(reach), (run.end + reach).min(text.len()));
            let region = &text[lo..hi];
            for (at, _) in region.match_indices(MARK_OPEN) {
                if let Some(close) = region[at..].find(MARK_CLOSE) {
                    spans.push((lo + at, lo + at + close + MARK_CLOSE.len_utf8()));
                }
            }
            for name in &self.public {
                spans.extend(region.match_indices(name.as_str()).map(|(at, n)| (lo + at, lo + at + n.len())));
            }
        }
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged
    }

    /// The maximal byte ranges covered by windows found in the table, in order.
    fn runs(&self, bytes: &[u8]) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        if bytes.len() < GRAM || self.grams.is_empty() {
            return runs;
        }
        let mut key = 0u64;
        // The window [i, i + GRAM) holds a byte outside the alphabet while i <= last_foreign.
        let mut last_foreign: Option<usize> = None;
        for (j, &b) in bytes.iter().enumerate() {
            key = (key >> 8) | (u64::from(b) << 56);
            if self.alphabet[usize::from(b >> 6)] & (1 << (b & 63)) == 0 {
                last_foreign = Some(j);
            }
            let Some(i) = (j + 1).checked_sub(GRAM) else { continue };
            if last_foreign.is_some_and(|f| f >= i) {
                continue;
            }
            let (word, bit) = filter_slot(key);
            if self.filter[word] & bit == 0 {
                continue;
            }
            let Some(owners) = self.grams.get(&key) else { continue };
            match runs.last_mut() {
                Some(run) if i <= run.end => run.end = i + GRAM,
                _ => runs.push(Run { start: i, end: i + GRAM, tally: Vec::new() }),
            }
            let tally = &mut runs.last_mut().expect("just pushed").tally;
            for &o in owners {
                match tally.iter_mut().find(|(owner, _)| *owner == o) {
                    Some((_, n)) => *n += 1,
                    None => tally.push((o, 1)),
                }
            }
        }
        runs
    }

    /// The secret that accounts for most windows of a run; on a tie the shortest, so a
    /// run that is exactly one secret is named after it, not after a longer one
    /// that contains it.
    fn label_of(&self, tally: &[(u32, u32)]) -> usize {
        let best = tally
            .iter()
            .map(|&(o, n)| (o as usize, n))
            .max_by(|(a, na), (b, nb)| {
                na.cmp(nb).then(self.secrets[*b].value.len().cmp(&self.secrets[*a].value.len())).then(b.cmp(a))
            })
            .expect("a run has at least one window");
        best.0
    }
}

struct Run {
    start: usize,
    end: usize,
    /// (secret, windows of this run that belong to it).
    tally: Vec<(u32, u32)>,
}

/// The same 8 bytes give the same key whether read from a form or from the rolling scan.
fn gram(window: &[u8]) -> u64 {
    u64::from_le_bytes(window.try_into().expect("a gram is 8 bytes"))
}

/// A run may start or end inside a multi-byte character: mask the whole character.
fn widen_to_chars(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end)
}

/// Keys are 8 bytes of text; one multiply spreads them well enough, and the scan does a
/// look-up per byte, where SipHash would dominate. Only the table's own keys (secret
/// grams) can collide, so a hostile text cannot make look-ups slow.
#[derive(Default)]
struct GramHasher(u64);

impl Hasher for GramHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b) ^ self.0.rotate_left(8));
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = mix(key);
    }
}

fn mix(key: u64) -> u64 {
    let h = (key ^ (key >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}

/// A credential value. Cloning is cheap; printing never shows the value.
#[derive(Clone)]
pub struct Secret {
    label: String,
    value: Arc<str>,
}

impl Secret {
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The raw value, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(«redacted:{}»)", self.label)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "«redacted:{}»", self.label)
    }
}

/// `len` random letters and digits: the one maker of bearers nobody holds (a wrong
/// bearer, a decoy), of the demo's and the tests' credentials. Letters and digits pass
/// every header, URL and environment unquoted.
pub fn random_token(len: usize) -> String {
    use rand::RngExt;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..len).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

#[cfg(test)]
mod tests;
