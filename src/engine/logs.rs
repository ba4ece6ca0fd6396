//! What a container carries that a secret may leak into: its environment as the engine
//! shows it, and its log (`docker logs`), read line by line in a bounded window. The
//! text goes to a caller's scanner and is never kept: only line numbers come back.

use futures_util::StreamExt;

use super::{Engine, EngineError};

/// Which stream of a container's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LogStream {
    Stdout,
    Stderr,
    /// A container with a TTY has one stream.
    Console,
}

impl std::fmt::Display for LogStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LogStream::Stdout => "stdout",
            LogStream::Stderr => "stderr",
            LogStream::Console => "console",
        })
    }
}

/// How a log was read: lines per stream, bytes, and whether the window cut it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogRead {
    pub stdout_lines: usize,
    pub stderr_lines: usize,
    pub console_lines: usize,
    pub bytes: u64,
    /// The byte cap ended the read before the engine did.
    pub cut: bool,
}

/// Where containers keep mounted secrets.
pub const SECRETS_DIR: &str = "/run/secrets";

/// What [`Engine::carried`] found.
#[derive(Clone, Debug, Default)]
pub struct EngineCarried {
    pub env: Vec<(String, String)>,
    pub command: Vec<String>,
    /// (path in the container, path on the engine's host) of each bind mount under
    /// [`SECRETS_DIR`].
    pub secret_binds: Vec<(String, String)>,
}

/// Splits frames into lines per stream, numbering each stream's lines from 1.
struct Lines {
    pending: [Vec<u8>; 3],
    counted: [usize; 3],
}

impl Lines {
    fn feed(&mut self, stream: LogStream, bytes: &[u8], each: &mut impl FnMut(LogStream, usize, &str)) {
        let i = stream as usize;
        self.pending[i].extend_from_slice(bytes);
        while let Some(end) = self.pending[i].iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending[i].drain(..=end).collect();
            self.counted[i] += 1;
            each(stream, self.counted[i], String::from_utf8_lossy(&line[..line.len() - 1]).trim_end_matches('\r'));
        }
    }

    fn finish(&mut self, each: &mut impl FnMut(LogStream, usize, &str)) {
        for stream in [LogStream::Stdout, LogStream::Stderr, LogStream::Console] {
            let i = stream as usize;
            if !self.pending[i].is_empty() {
                let line = std::mem::take(&mut self.pending[i]);
                self.counted[i] += 1;
                each(stream, self.counted[i], &String::from_utf8_lossy(&line));
            }
        }
    }
}

impl Engine {
    /// `Config.Env` of a container: (name, value) pairs. The values are for comparison
    /// only and are never printed.
    pub async fn environment(&self, container: &str) -> Result<Vec<(String, String)>, EngineError> {
        Ok(self.carried(container).await?.env)
    }

    /// What a container carries as the engine shows it: its environment, its command line
    /// (the process and its arguments) and the host files bind-mounted under
    /// `/run/secrets` (compose's file secrets). The values are compared, never printed.
    pub async fn carried(&self, container: &str) -> Result<EngineCarried, EngineError> {
        let inspect = self
            .docker()
            .inspect_container(container, None)
            .await
            .map_err(|e| EngineError::lookup("container", container, "inspecting container", e))?;
        let env = inspect.config.and_then(|c| c.env).unwrap_or_default();
        let env = env
            .into_iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (kv, String::new()),
            })
            .collect();
        let command: Vec<String> = inspect.path.into_iter().chain(inspect.args.unwrap_or_default()).collect();
        let secret_binds = inspect
            .mounts
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m.typ.as_deref() == Some("bind"))
            .filter_map(|m| Some((m.destination?, m.source?)))
            .filter(|(destination, _)| destination.starts_with(SECRETS_DIR))
            .collect();
        Ok(EngineCarried { env, command, secret_binds })
    }

    /// Every swarm config of a stack, decoded: (name, data). Configs are what a swarm
    /// service mounts as files; unlike secrets, the engine shows their data.
    pub async fn stack_configs(&self, stack: &str) -> Result<Vec<(String, Vec<u8>)>, EngineError> {
        let mut filters = std::collections::HashMap::new();
        filters.insert("label".to_string(), vec![format!("com.docker.stack.namespace={stack}")]);
        let options = bollard::query_parameters::ListConfigsOptionsBuilder::new().filters(&filters).build();
        let configs = self
            .docker()
            .list_configs(Some(options))
            .await
            .map_err(|e| EngineError::api(format!("listing the configs of stack {stack:?}"), e))?;
        Ok(configs
            .into_iter()
            .filter_map(|c| c.spec)
            .map(|spec| {
                let data = spec.data.and_then(|d| crate::text::decode_base64(&d)).unwrap_or_default();
                (spec.name.unwrap_or_default(), data)
            })
            .collect())
    }

    /// The last `tail` lines of a log (stdout and stderr), at most `max_bytes` of them,
    /// handed to `each` one line at a time with its stream and its number in that stream
    /// (from 1, the oldest line read).
    pub async fn log_lines(
        &self,
        of: LogOf<'_>,
        tail: usize,
        max_bytes: u64,
        each: impl FnMut(LogStream, usize, &str),
    ) -> Result<LogRead, EngineError> {
        let LogOf::Container(id) = of;
        read_log(self.docker().logs(id, Some(log_options(tail))), max_bytes, each)
            .await
            .map_err(|e| EngineError::lookup("container", id, "reading the log of", e))
    }
}

/// Whose log to read. (Not a swarm service's: `docker service logs` was seen to hang
/// for a whole run; a service's past is read task by task, each from its container.)
#[derive(Clone, Copy, Debug)]
pub enum LogOf<'a> {
    /// A container, by id or name.
    Container(&'a str),
}

fn log_options(tail: usize) -> bollard::query_parameters::LogsOptions {
    bollard::query_parameters::LogsOptionsBuilder::new().stdout(true).stderr(true).tail(&tail.to_string()).build()
}

/// Reads a log stream line by line, at most `max_bytes` of it.
async fn read_log(
    stream: impl futures_util::Stream<Item = Result<bollard::container::LogOutput, bollard::errors::Error>>,
    max_bytes: u64,
    mut each: impl FnMut(LogStream, usize, &str),
) -> Result<LogRead, bollard::errors::Error> {
    use bollard::container::LogOutput;
    let mut stream = std::pin::pin!(stream);
    let mut lines = Lines { pending: Default::default(), counted: [0; 3] };
    let mut read = LogRead::default();
    while let Some(frame) = stream.next().await {
        let frame = frame?;
        let (which, bytes) = match &frame {
            LogOutput::StdOut { message } => (LogStream::Stdout, message),
            LogOutput::StdErr { message } => (LogStream::Stderr, message),
            LogOutput::Console { message } => (LogStream::Console, message),
            LogOutput::StdIn { .. } => continue,
        };
        read.bytes += bytes.len() as u64;
        lines.feed(which, bytes, &mut each);
        if read.bytes >= max_bytes {
            read.cut = true;
            break;
        }
    }
    lines.finish(&mut each);
    [read.stdout_lines, read.stderr_lines, read.console_lines] = lines.counted;
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_become_numbered_lines_per_stream() {
        let mut seen = Vec::new();
        let mut each = |s: LogStream, n: usize, l: &str| seen.push(format!("{s}:{n}:{l}"));
        let mut lines = Lines { pending: Default::default(), counted: [0; 3] };
        lines.feed(LogStream::Stderr, b"a\nb", &mut each);
        lines.feed(LogStream::Stdout, b"x\r\n", &mut each);
        lines.feed(LogStream::Stderr, b"c\nd", &mut each);
        lines.finish(&mut each);
        assert_eq!(seen, ["stderr:1:a", "stdout:1:x", "stderr:2:bc", "stderr:3:d"]);
    }
}
